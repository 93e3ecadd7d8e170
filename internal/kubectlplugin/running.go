package kubectlplugin

import (
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/archfilter/archfilter/pkg/misplaced"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// Events are read in pages of eventPage, at most maxEventPages of them: a cluster
// keeps an hour of events by default, and the exec format errors among them are
// found by their message, which no field selector reaches.
const (
	eventPage     = 500
	maxEventPages = 10
)

// runningRow is one finding on one bound pod, with the workload that owns the pod.
type runningRow struct {
	// Kind, Namespace and Name are the owning workload: the Deployment of a
	// ReplicaSet, the CronJob of a Job, else the pod's controller, or the pod.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Pod       string `json:"pod"`
	Node      string `json:"node"`
	// NodePlatform is the node's os/arch ("" when the node is not known).
	NodePlatform string `json:"nodePlatform"`
	// Finding is node-cannot-run or exec-format-error.
	Finding   string `json:"finding"`
	Container string `json:"container,omitempty"`
	Image     string `json:"image,omitempty"`
	// Running is the image the container runs, its status' digest in the
	// image's repository, when that is what was judged (not the tag's answer).
	Running string `json:"running,omitempty"`
	// ImagePlatforms are where the image runs (node-cannot-run).
	ImagePlatforms string `json:"imagePlatforms,omitempty"`
	Evidence       string `json:"evidence"`
	// Skipped says why archfilter leaves the pod alone, when it does: then it
	// would not place the pod's replacement either.
	Skipped string `json:"skipped,omitempty"`
	// NotEvicted says why evicting the pod would not heal it ("" when it
	// would): the placement companion's --misplaced=evict decides the same.
	NotEvicted    string `json:"notEvicted,omitempty"`
	NotEvictedWhy string `json:"notEvictedWhy,omitempty"`
}

// runningNote is what was learnt about a bound pod that is not a finding: its
// tag moved to an image without its node's platform, or the image it runs
// could not be read.
type runningNote struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	Image     string `json:"image"`
	Note      string `json:"note"`
	Text      string `json:"text"`
}

// runningView is what report --running prints.
type runningView struct {
	// Pods is the number of bound pods checked.
	Pods     int          `json:"pods"`
	Findings []runningRow `json:"findings"`
	// Notes are information, not findings: a pod whose tag moved runs the
	// image it started with.
	Notes []runningNote `json:"notes,omitempty"`
	// Errors are what could not be checked: images that did not resolve, events
	// not read.
	Errors []string `json:"errors,omitempty"`
}

// buildRunning checks the bound pods of ns (all namespaces for "") with package
// misplaced: it lists nodes, pods and the pods' events, resolves the images of
// the pods archfilter reads, and reads a ReplicaSet or Job only to name the
// workload of a pod it reports.
func buildRunning(ctx context.Context, client kubernetes.Interface, ns string, reg *registryFlags, dc *decider) (*runningView, error) {
	return buildRunningObserving(ctx, client, ns, reg, dc, nil)
}

// buildRunningObserving is buildRunning, and fe, when not nil, learns from the
// events read which schedulers run ArchFilter (frontEnds.observe).
func buildRunningObserving(ctx context.Context, client kubernetes.Interface, ns string, reg *registryFlags, dc *decider, fe *frontEnds) (*runningView, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	byName := map[string]*v1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	bound := fields.AndSelectors(fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(v1.PodSucceeded))).String()
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: bound})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	v := &runningView{Findings: []runningRow{}}
	events, err := execFormatEvents(ctx, client, ns, fe)
	if err != nil {
		v.Errors = append(v.Errors, err.Error())
	}
	var pods []*v1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; p.Spec.NodeName != "" && p.Status.Phase != v1.PodSucceeded {
			pods = append(pods, p)
		}
	}
	v.Pods = len(pods)
	results, err := resolvePods(ctx, client, reg, dc, pods)
	if err != nil {
		return nil, err
	}
	owners := ownerNames{client: client, seen: map[string][2]string{}}
	witness := newConfigWitness(reg, client)
	clusterPlatforms := func() []platform.NodePlatform { return platformsOfNodes(nodes.Items) }
	for i, pod := range pods {
		node := byName[pod.Spec.NodeName]
		r := judgeBound(dc, pod, node, events[pod.Namespace+"/"+pod.Name], results[i], clusterPlatforms)
		notes, findings, errs := boundRows(ctx, &owners, witness, pod, node, r, results[i])
		v.Notes = append(v.Notes, notes...)
		v.Findings = append(v.Findings, findings...)
		v.Errors = append(v.Errors, errs...)
	}
	sort.SliceStable(v.Findings, func(i, j int) bool {
		a, b := v.Findings[i], v.Findings[j]
		return a.Namespace+"/"+a.Kind+"/"+a.Name+"/"+a.Pod < b.Namespace+"/"+b.Kind+"/"+b.Name+"/"+b.Pod
	})
	return v, nil
}

// judgeBound is the one judgement of a bound pod, for report --running and
// why: package misplaced under the command's settings, with the platforms of
// the pod's images (results, nil when none were read) and the events that may
// concern it.
func judgeBound(dc *decider, pod *v1.Pod, node *v1.Node, events []v1.Event, results map[string]resolver.Result, clusterPlatforms func() []platform.NodePlatform) misplaced.Report {
	return misplaced.Find(dc.settings, misplaced.Input{Pod: pod, Node: node, Events: events, Namespaces: dc.namespaces, ClusterPlatforms: clusterPlatforms,
		Lookup: func(image string) (resolver.Result, bool) {
			res, ok := results[image]
			return res, ok
		}})
}

// boundRows turns what judgeBound found for pod into report --running's notes,
// rows (one per finding, naming the workload that owns the pod) and errors
// (images that could not be resolved).
func boundRows(ctx context.Context, owners *ownerNames, witness *configWitness, pod *v1.Pod, node *v1.Node, r misplaced.Report, results map[string]resolver.Result) ([]runningNote, []runningRow, []string) {
	var (
		notes []runningNote
		rows  []runningRow
		errs  []string
	)
	for _, n := range r.Notes {
		notes = append(notes, runningNote{Namespace: pod.Namespace, Pod: pod.Name, Container: n.Container, Image: n.Image, Note: string(n.Kind), Text: n.Text})
	}
	for _, img := range r.Unresolved {
		if err := results[img].Err; err != nil {
			errs = append(errs, fmt.Sprintf("pod %s/%s: %v", pod.Namespace, pod.Name, err))
		}
	}
	if len(r.Findings) == 0 {
		return notes, nil, errs
	}
	kind, name := owners.of(ctx, pod)
	notEvicted, why := r.Evictable(pod)
	for _, f := range r.Findings {
		rows = append(rows, runningRow{Kind: kind, Namespace: pod.Namespace, Name: name, Pod: pod.Name,
			Node: f.Node, NodePlatform: f.NodePlatform, Finding: string(f.Kind), Container: f.Container, Image: f.Image, Running: f.Running,
			ImagePlatforms: f.ImagePlatforms, Evidence: f.Evidence + witness.about(ctx, pod, f, node), Skipped: string(r.Skip),
			NotEvicted: string(notEvicted), NotEvictedWhy: why})
	}
	return notes, rows, errs
}

// platformsOfNodes lists the distinct platforms of nodes, Windows builds
// included (a replacement must match one of them).
func platformsOfNodes(nodes []v1.Node) []platform.NodePlatform {
	ptrs := make([]*v1.Node, len(nodes))
	for i := range nodes {
		ptrs[i] = &nodes[i]
	}
	return platform.DistinctNodePlatforms(ptrs)
}

// resolvePods resolves, per pod, the images of the pods whose node misplaced
// checks against them, and the digests their containers run, with each pod's
// pull secrets.
func resolvePods(ctx context.Context, client kubernetes.Interface, reg *registryFlags, dc *decider, pods []*v1.Pod) ([]map[string]resolver.Result, error) {
	results := make([]map[string]resolver.Result, len(pods))
	var reads []int
	for i, pod := range pods {
		if misplaced.ReadsImages(dc.settings, pod, dc.namespaces) {
			reads = append(reads, i)
		}
	}
	if len(reads) == 0 {
		return results, nil
	}
	store, err := reg.newStore(ctx, client)
	if err != nil {
		return nil, err
	}
	s, err := reg.newSessionWith(nil, nil)
	if err != nil {
		return nil, &ExitError{Code: ExitInputError, Msg: err.Error()}
	}
	var g errgroup.Group
	g.SetLimit(maxConcurrentImages)
	for _, i := range reads {
		g.Go(func() error {
			creds := store.ForPod(pods[i])
			m := map[string]resolver.Result{}
			for _, ref := range misplaced.Images(pods[i]) {
				m[ref] = s.resolver.Resolve(ctx, resolver.Request{Image: ref, Credentials: creds})
			}
			results[i] = m
			return nil
		})
	}
	_ = g.Wait()
	return results, nil
}

// execFormatEvents reads the events of pods in ns, a bounded number of pages,
// and keeps those that carry an exec format error, by the pod's namespace/name
// (misplaced.Find tells pods of the same name apart by UID). fe, when not nil,
// observes every page.
func execFormatEvents(ctx context.Context, client kubernetes.Interface, ns string, fe *frontEnds) (map[string][]v1.Event, error) {
	out := map[string][]v1.Event{}
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.kind", "Pod").String(), Limit: eventPage}
	for page := 0; ; page++ {
		if page == maxEventPages {
			return out, fmt.Errorf("events: read the first %d events of pods only", maxEventPages*eventPage)
		}
		evs, err := client.CoreV1().Events(ns).List(ctx, opts)
		if err != nil {
			return out, fmt.Errorf("listing the events of pods: %w", err)
		}
		if fe != nil {
			fe.observe(evs.Items)
		}
		for _, e := range evs.Items {
			if misplaced.IsExecFormatError(e.Message) {
				key := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
				out[key] = append(out[key], e)
			}
		}
		if opts.Continue = evs.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// ownerNames names the workload that owns a pod, reading each ReplicaSet and Job
// once.
type ownerNames struct {
	client kubernetes.Interface
	seen   map[string][2]string
}

// of returns the kind and name of the pod's workload: its controller, the
// Deployment of its ReplicaSet, the CronJob of its Job, or the pod itself. An
// owner that cannot be read is named as the pod's controller reference says.
func (o *ownerNames) of(ctx context.Context, pod *v1.Pod) (kind, name string) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return "Pod", pod.Name
	}
	if ref.Kind != "ReplicaSet" && ref.Kind != "Job" {
		return ref.Kind, ref.Name
	}
	key := pod.Namespace + "/" + ref.Kind + "/" + ref.Name
	if kn, ok := o.seen[key]; ok {
		return kn[0], kn[1]
	}
	kind, name = ref.Kind, ref.Name
	var meta *metav1.ObjectMeta
	switch ref.Kind {
	case "ReplicaSet":
		if rs, err := o.client.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
			meta = &rs.ObjectMeta
		}
	case "Job":
		if job, err := o.client.BatchV1().Jobs(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
			meta = &job.ObjectMeta
		}
	}
	if meta != nil {
		if up := metav1.GetControllerOfNoCopy(meta); up != nil && (up.Kind == "Deployment" || up.Kind == "CronJob") {
			kind, name = up.Kind, up.Name
		}
	}
	o.seen[key] = [2]string{kind, name}
	return kind, name
}

// runningStatus is the exit status of the running check (root.go): ExitInputError
// when something could not be checked, else ExitFailed when a pod is on a node that
// cannot run it.
func runningStatus(v *runningView) error {
	switch {
	case len(v.Errors) > 0:
		return &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("%d bound pods checked, but %d things could not be checked", v.Pods, len(v.Errors))}
	case len(v.Findings) > 0:
		return &ExitError{Code: ExitFailed, Msg: fmt.Sprintf("%d of %d bound pods are on a node that cannot run them", misplacedPods(v), v.Pods)}
	}
	return nil
}

func misplacedPods(v *runningView) int {
	pods := map[string]bool{}
	for _, r := range v.Findings {
		pods[r.Namespace+"/"+r.Pod] = true
	}
	return len(pods)
}

func printRunning(w io.Writer, format outputFormat, v *runningView) error {
	switch format {
	case outputJSON, outputYAML:
		return writeStructured(w, format, v)
	case outputCSV:
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"kind", "namespace", "name", "pod", "node", "node_platform", "finding", "container", "image", "image_platforms", "evidence", "skipped"})
		for _, r := range v.Findings {
			_ = cw.Write([]string{r.Kind, r.Namespace, r.Name, r.Pod, r.Node, r.NodePlatform, r.Finding, r.Container, r.Image, r.ImagePlatforms, r.Evidence, r.Skipped})
		}
		cw.Flush()
		return cw.Error()
	}
	printRunningTable(w, v)
	return nil
}

// printRunningTable prints the findings grouped by workload: a workload, and a
// pod with several findings, is named on its first row only.
func printRunningTable(w io.Writer, v *runningView) {
	if len(v.Findings) == 0 {
		writeLine(w, "No bound pod is on a node that cannot run it (%d checked).", v.Pods)
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "WORKLOAD\tPOD\tNODE\tFINDING\tCONTAINER\tWHY")
	var prev runningRow
	for i, r := range v.Findings {
		workload, pod, node := r.Kind+"/"+r.Namespace+"/"+r.Name, r.Pod, r.Node+" ("+cmp.Or(r.NodePlatform, "unknown")+")"
		if i > 0 && r.Kind == prev.Kind && r.Namespace == prev.Namespace && r.Name == prev.Name {
			workload = ""
			if r.Pod == prev.Pod {
				pod, node = "", ""
			}
		}
		prev = r
		why := r.Evidence
		if r.Finding == string(misplaced.NodeCannotRun) && r.Image != "" {
			why = r.Image + " runs on " + r.ImagePlatforms
			if r.Running != "" {
				why = r.Image + " runs " + r.Running + ", on " + r.ImagePlatforms
			}
		}
		if r.Skipped != "" {
			why += " (not in archfilter's scope: " + r.Skipped + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", workload, pod, node, r.Finding, cmp.Or(r.Container, "-"), why)
	}
	_ = tw.Flush()
}

// runningNotes prints the notes, which are information, not findings.
func runningNotes(w io.Writer, v *runningView) {
	for _, n := range v.Notes {
		writeLine(w, "note: pod %s/%s, container %s (%s): %s", n.Namespace, n.Pod, n.Container, n.Image, n.Text)
	}
}

// runningErrors prints what could not be checked, as the other commands print
// per-item errors.
func runningErrors(w io.Writer, v *runningView) {
	for _, e := range v.Errors {
		writeLine(w, "error: %s", strings.TrimSpace(e))
	}
}

// reportRunning is report --running.
func reportRunning(ctx context.Context, streams genericiooptions.IOStreams, client kubernetes.Interface, ns string, reg *registryFlags, dc *decider, format outputFormat) error {
	v, err := buildRunning(ctx, client, ns, reg, dc)
	if err != nil {
		return err
	}
	if err := printRunning(streams.Out, format, v); err != nil {
		return err
	}
	if format == outputTable {
		runningNotes(streams.Out, v)
	}
	runningErrors(streams.ErrOut, v)
	return runningStatus(v)
}

// worstStatus combines two exit statuses: ExitInputError wins over ExitFailed,
// which wins over success.
func worstStatus(a, b error) error {
	if ExitCode(b) > ExitCode(a) {
		return b
	}
	return a
}

package kubectlplugin

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/misplaced"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
)

// archfilterEventReasons are the reasons ArchFilter records on pods
// (pkg/plugins/archfilter/events.go; a test keeps the lists equal) and the scheduler's
// own, which carry ArchFilter's filter reasons.
var archfilterEventReasons = []string{
	"ResolvingImagePlatforms", "ImagePlatformsResolved", "ImagePlatformResolutionFailed",
	"ArchFilterFailOpen", "InvalidPlatformPreference", "InvalidArchFilterAnnotation",
	"DaemonSetPodPlatformMismatch",
	"ArchFilterPlacement", "ArchFilterPlacementFailedOpen", "ArchFilterPlacementRejected",
	"ArchFilterPlacementUnmergeable", "ArchFilterPlacementGateRemoved",
	"FailedScheduling", "Scheduled",
}

// nodeGroup is the cluster's nodes of one platform and whether the pod runs there.
type nodeGroup struct {
	Platform string `json:"platform"`
	Nodes    int    `json:"nodes"`
	// CanRun: every image runs there (or the pod declares a platform that does).
	CanRun bool `json:"canRun"`
	// Allowed: archfilter's decision lets the pod run there.
	Allowed bool `json:"allowed"`
	// Rule is how the node runs each image: "direct (linux/arm64)" when every image has a
	// platform the node runs as is, "arm64 runs linux/arm/v7" when the 32-bit rule
	// (amd64 runs 386, arm64 runs arm) lets every image run, and per rule the containers
	// it applies to when they differ: "arm64 runs linux/arm/v7: setup; direct: app".
	Rule string `json:"rule,omitempty"`
}

// eventView is one recorded decision.
type eventView struct {
	Type    string      `json:"type"`
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	Count   int32       `json:"count,omitempty"`
	Last    metav1.Time `json:"lastTimestamp"`
}

// whyView is what why prints.
type whyView struct {
	workloadView
	NodeName       string `json:"nodeName,omitempty"`
	OwnConstraints string `json:"ownConstraints"`
	// Recorded is the decision the placement mode recorded on the pod (the
	// one the cluster acted on); Decision is re-resolved now.
	Recorded *decision.Record `json:"recorded,omitempty"`
	// RecordError says why a record could not be read.
	RecordError string `json:"recordError,omitempty"`
	// Notes say what kept the decision from being the cluster's (policies
	// that could not be read).
	Notes []string `json:"notes,omitempty"`
	// CredentialProblems are pull secrets that could not be used.
	CredentialProblems []string    `json:"credentialProblems,omitempty"`
	Nodes              []nodeGroup `json:"nodes"`
	Events             []eventView `json:"events"`
	// NewerTags are the searches for a newer tag of each image that does not run on
	// a node platform the pod needs (neededPlatforms).
	NewerTags []newerTagView `json:"newerTags,omitempty"`
	// DecidedBy is the front-end that decides for the pod and how that is
	// known (frontEnds.of).
	DecidedBy frontView `json:"decidedBy"`
	// Running are, for a bound pod, what report --running finds on it (the same
	// judgement, judgeBound); RunningNotes and RunningErrors its notes and what
	// could not be checked.
	Running       []runningRow  `json:"running,omitempty"`
	RunningNotes  []runningNote `json:"runningNotes,omitempty"`
	RunningErrors []string      `json:"runningErrors,omitempty"`
	// Verdict is why's answer in one line, its last (why_status.go).
	Verdict verdictView `json:"verdict"`

	// pod is the pod as read; node its node (nil when unbound or not listed);
	// failedScheduling the message of its last FailedScheduling event.
	pod              *v1.Pod
	node             *v1.Node
	failedScheduling string
}

func newWhyCommand(kube *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		reg    registryFlags
		dec    decisionFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "why POD",
		Short: "Explain where a pod can run: its images' platforms, the cluster's nodes, archfilter's decision",
		Long: `For each container (init, sidecar, regular; ephemeral ones are ignored) and image
volume: the image's platforms, read with the pod's own pull secrets (and the local docker
config). Then the pod's intersection, with the image that empties it named first, the
pod's own os/arch constraints, archfilter's decision under --args (the settings the
cluster runs with: which front-end decides, whether the pod is in scope, the platforms
it allows and where they came from), the cluster's nodes per platform, whether the pod
runs there (and by which rule) and whether archfilter allows it there, and the events
archfilter and the scheduler recorded. A pod the placement mode placed carries the
decision it took (annotation archfilter.io/decision): why shows it as the decision the
cluster acted on, beside the one re-resolved now.

Which front-end decides is read from the cluster, not guessed: --scheduler-name when
given; the placement mode's marks on the pod (its decision, its scheduling gate, its
events); the deployed scheduler configuration (a ConfigMap labelled
archfilter.io/config=scheduler: the profiles that enable ArchFilter); the ArchFilter
events a scheduler recorded; the placement mode's MutatingWebhookConfiguration. The
output says how it knows, or that it does not and which flag tells it.

The last line is the verdict: bound to a node where it runs; bound to a node where it
cannot run (what report --running finds on it); Pending because ...; or not
archfilter's (out of its scope, or a scheduler without ArchFilter and no placement
mode). Exit status: 1 when the pod is bound where it cannot run, or runs nowhere
(no platform is left, or none of the cluster's nodes runs it); 2 when that could not
be answered (an image or the node could not be read); 0 otherwise.`,
		Example: `  kubectl archfilter why -n shop web-7d9c5b6f4-x2x8q`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, outputTable, outputJSON, outputYAML); err != nil {
				return err
			}
			client, ns, dc, err := clusterSetup(cmd.Context(), kube, &reg, &dec)
			if err != nil {
				return err
			}
			fe := findFrontEnds(cmd.Context(), client, &dec, dc.namespaces)
			v, err := explainPodWith(cmd.Context(), client, ns, args[0], &reg, dc, fe)
			if err != nil {
				return err
			}
			if err := printWhy(streams, outputFormat(output), v); err != nil {
				return err
			}
			return whyStatus(v) // exit status: why_status.go
		},
	}
	reg.add(cmd)
	addNewerTagsFlag(cmd, &reg)
	dec.add(cmd)
	addOutputFlag(cmd, &output, outputTable, outputJSON, outputYAML)
	return cmd
}

// clusterSetup reads the flags the cluster commands share; errors are input errors.
// The settings are those of --args, else the cluster's archfilter
// configuration (decisionFlags.loadFromCluster), with the namespaces'
// ArchFilterPolicy objects.
func clusterSetup(ctx context.Context, kube *genericclioptions.ConfigFlags, reg *registryFlags, dec *decisionFlags) (kubernetes.Interface, string, *decider, error) {
	client, ns, err := clusterClient(kube)
	if err != nil {
		return nil, "", nil, &ExitError{Code: ExitInputError, Msg: err.Error()}
	}
	settings, args, err := dec.loadFromCluster(ctx, client)
	if err != nil {
		return nil, "", nil, err
	}
	reg.args = args
	dc := &decider{settings: settings, namespaces: clusterNamespaces(ctx, client), config: dec.source}
	if settings.PoliciesEnabled {
		dyn, err := clusterDynamic(kube)
		if err != nil {
			return nil, "", nil, &ExitError{Code: ExitInputError, Msg: err.Error()}
		}
		dc.policies = clusterPolicies(ctx, dyn, dc.note)
	}
	return client, ns, dc, nil
}

// clusterDynamic returns a dynamic client for the kubeconfig flags' cluster.
func clusterDynamic(kube *genericclioptions.ConfigFlags) (dynamic.Interface, error) {
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return dynamic.NewForConfig(cfg)
}

// explainPod answers why for one pod, reading which front-end decides from
// the cluster (findFrontEnds, without flags).
func explainPod(ctx context.Context, client kubernetes.Interface, ns, name string, reg *registryFlags, dc *decider) (*whyView, error) {
	return explainPodWith(ctx, client, ns, name, reg, dc, nil)
}

// explainPodWith is explainPod, with fe saying which front-end decides (nil:
// read it from the cluster).
func explainPodWith(ctx context.Context, client kubernetes.Interface, ns, name string, reg *registryFlags, dc *decider, fe *frontEnds) (*whyView, error) {
	pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", ns, name, err)
	}
	creds, problems, err := reg.credentialsFor(ctx, client, pod)
	if err != nil {
		return nil, err
	}
	s, err := reg.newSessionWith(creds, problems)
	if err != nil {
		return nil, &ExitError{Code: ExitInputError, Msg: err.Error()}
	}
	sel := fields.Set{"involvedObject.name": pod.Name, "involvedObject.namespace": pod.Namespace}.AsSelector().String()
	evs, err := client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing the pod's events: %w", err)
	}
	own := eventsOf(evs.Items, pod)
	if fe == nil {
		fe = findFrontEnds(ctx, client, nil, dc.namespaces)
	}
	front := fe.of(pod, own)
	// Notes (policies that could not be read) are recorded on dc, which the
	// policy reader holds; jc judges.
	jc := dc.forFront(front)

	// The decision is the one taken before the pod was bound: judged without
	// its node, unless it was created bound (a mirror pod), which nothing placed.
	judged := pod.DeepCopy()
	if _, mirror := pod.Annotations[v1.MirrorPodAnnotationKey]; !mirror {
		judged.Spec.NodeName = ""
	}
	w := workload{Source: "cluster", Kind: "Pod", Pod: judged}
	refs := jc.images([]workload{w})
	if pod.Spec.NodeName != "" && misplaced.ReadsImages(jc.settings, pod, jc.namespaces) {
		// A bound pod is judged by the images it runs, as report --running does.
		for _, ref := range misplaced.Images(pod) {
			if !slices.Contains(refs, ref) {
				refs = append(refs, ref)
			}
		}
	}
	results := resolveAll(ctx, s, refs)
	v := &whyView{workloadView: evaluate(w, results, jc, nil, false), NodeName: pod.Spec.NodeName, pod: pod, DecidedBy: front}
	v.Namespace, v.Name = pod.Namespace, pod.Name
	v.Decision.By = front.By
	v.OwnConstraints = describeConstraint(podplatform.OwnConstraintOf(pod))
	v.CredentialProblems = problems
	if rec, ok, err := decision.RecordOf(pod); err != nil {
		v.RecordError = err.Error()
	} else if ok {
		v.Recorded = &rec
	}
	compat := jc.settings.Compat

	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	v.Nodes = groupNodes(nodes.Items, v.allowed, v.judged.allowed(), v.Images, compat)
	unresolved := v.unresolved()
	for i := range v.Nodes {
		switch {
		case len(unresolved) > 0:
			// An image that could not be resolved might not run anywhere.
			v.Nodes[i].CanRun, v.Nodes[i].Rule = false, "unknown: "+unresolved[0].Image+" could not be resolved"
		case !v.judged.read && v.judged.skip != "":
			v.Nodes[i].CanRun, v.Nodes[i].Rule = false, "unknown: images not read (not in archfilter's scope)"
		}
	}
	var bound *misplaced.Report
	if pod.Spec.NodeName != "" {
		for i := range nodes.Items {
			if nodes.Items[i].Name == pod.Spec.NodeName {
				v.node = &nodes.Items[i]
			}
		}
		r := judgeBound(jc, pod, v.node, own, results, func() []platform.NodePlatform { return platformsOfNodes(nodes.Items) })
		owners := ownerNames{client: client, seen: map[string][2]string{}}
		v.RunningNotes, v.Running, v.RunningErrors = boundRows(ctx, &owners, newConfigWitness(reg, client), pod, v.node, r, results)
		bound = &r
	}

	v.Events = podEvents(own, pod)
	for _, e := range v.Events {
		if e.Reason == "FailedScheduling" {
			v.failedScheduling = e.Message // the last: events are oldest first
		}
	}
	if reg.newerTags {
		needed := neededPlatforms(pod, v.Images, nodes.Items)
		v.NewerTags = findNewerTags(ctx, s, compat, podBlockedImages(v.Images, needed, compat, creds))
	}
	v.Notes = dc.notes
	v.Verdict = verdictOf(v, bound)
	return v, nil
}

// eventsOf keeps the events about pod (a field selector is a filter the API
// server may not apply: client-go's fake does not).
func eventsOf(evs []v1.Event, pod *v1.Pod) []v1.Event {
	var out []v1.Event
	for _, e := range evs {
		if e.InvolvedObject.Name == pod.Name && e.InvolvedObject.Namespace == pod.Namespace &&
			(e.InvolvedObject.UID == "" || e.InvolvedObject.UID == pod.UID) {
			out = append(out, e)
		}
	}
	return out
}

// forFront is dc judging a pod as front decides for it: the plugin of its
// scheduler, else as the placement mode (also when no front-end decides or it
// is not known: that is the decision archfilter would take).
func (dc *decider) forFront(front frontView) *decider {
	settings := *dc.settings
	settings.Schedulers = sets.New[string]()
	if front.By == frontScheduler {
		settings.Schedulers.Insert(front.Scheduler)
	}
	cp := *dc
	cp.settings = &settings
	return &cp
}

// groupNodes counts nodes per platform and says whether allowed runs there and by which
// rule each of images (their own platforms, before any rule widened them) runs, and
// whether archfilter's decision, decided, lets the pod run there.
func groupNodes(nodes []v1.Node, allowed, decided platform.Set, images []workloadImage, compat platform.Compat) []nodeGroup {
	byPlatform := map[platform.NodePlatform]int{}
	for i := range nodes {
		np, ok := platform.FromNode(&nodes[i])
		if !ok {
			np = platform.NodePlatform{OS: "unknown", Architecture: "unknown"}
		}
		byPlatform[np]++
	}
	groups := make([]nodeGroup, 0, len(byPlatform))
	for np, n := range byPlatform {
		g := nodeGroup{Platform: np.String(), Nodes: n}
		if np.WindowsBuild != "" {
			g.Platform += " (build " + np.WindowsBuild + ")"
		}
		g.CanRun, g.Rule = runsOn(allowed, np, compat)
		g.Allowed, _ = runsOn(decided, np, compat)
		g.Allowed = g.Allowed || decided.IsAny()
		if g.CanRun && !allowed.IsAny() {
			g.Rule = imagesRule(allowed, images, np, compat)
		}
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Platform < groups[j].Platform })
	return groups
}

// runsOn reports whether a platform of allowed runs on np, and the rule that applied to
// that platform of the intersection (imagesRule says how np runs each image).
func runsOn(allowed platform.Set, np platform.NodePlatform, compat platform.Compat) (bool, string) {
	if allowed.IsAny() {
		return np.OS != "unknown", "any platform"
	}
	for _, p := range allowed.Platforms() {
		if rule, ok := compat.Rule(p, np); ok {
			if rule == "" {
				return true, "direct (" + p.String() + ")"
			}
			return true, rule + " runs " + p.String()
		}
	}
	return false, ""
}

// imagesRule says how np, which runs allowed, runs each of images. The rule is asked of
// every image's own platforms, not of the intersection: an arm/v7 image beside an arm64
// one leaves linux/arm64 there, which np runs directly, though the arm/v7 image runs only
// under the 32-bit rule; and images that both offer arm/v7 and arm64 leave arm/v7 there
// too, though np runs them directly. It is "direct (linux/arm64)" (the platform of allowed
// np runs as is) when every image runs directly, the rule when one rule lets every image
// run ("arm64 runs linux/arm/v7"), and else, per rule in the order the images first need
// it, the containers it applies to: "arm64 runs linux/arm/v7: setup; direct: mesh, app".
func imagesRule(allowed platform.Set, images []workloadImage, np platform.NodePlatform, compat platform.Compat) string {
	var rules []string
	containers := map[string][]string{}
	for _, img := range images {
		if img.Error != "" {
			continue
		}
		rule := imageRule(img.set, np, compat)
		if _, seen := containers[rule]; !seen {
			rules = append(rules, rule)
		}
		containers[rule] = append(containers[rule], img.Container)
	}
	switch {
	case len(rules) == 0 || (len(rules) == 1 && rules[0] == ruleDirect):
		for _, p := range allowed.Platforms() {
			if p.Matches(np) {
				return ruleDirect + " (" + p.String() + ")"
			}
		}
		return ruleDirect
	case len(rules) == 1:
		return rules[0]
	}
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = r + ": " + strings.Join(containers[r], ", ")
	}
	return strings.Join(parts, "; ")
}

const ruleDirect = "direct"

// imageRule says how np runs an image of platforms set: "direct" when one of them matches
// np as is, else the 32-bit rule that lets one run, e.g. "arm64 runs linux/arm/v7". It
// names the platform containerd would pull: the host's own first, then the highest
// variant (an arm64 host's order is arm64, arm/v8, arm/v7, arm/v6, arm/v5), which is the
// last of a Set's sorted platforms.
func imageRule(set platform.Set, np platform.NodePlatform, compat platform.Compat) string {
	if set.IsAny() || set.MatchesNode(np) {
		return ruleDirect
	}
	for _, p := range slices.Backward(set.Platforms()) {
		if rule, ok := compat.Rule(p, np); ok && rule != "" {
			return rule + " runs " + p.String()
		}
	}
	return "none"
}

func describeConstraint(c podplatform.OwnConstraint) string {
	if c.IsZero() {
		return "none"
	}
	var parts []string
	if c.OS != nil {
		parts = append(parts, "os in "+strings.Join(sets.List(c.OS), ","))
	}
	if c.Arch != nil {
		parts = append(parts, "arch in "+strings.Join(sets.List(c.Arch), ","))
	}
	return strings.Join(parts, "; ")
}

// podEvents keeps the pod's archfilter and scheduling events, oldest first.
func podEvents(evs []v1.Event, pod *v1.Pod) []eventView {
	out := []eventView{}
	for _, e := range evs {
		if e.InvolvedObject.Name != pod.Name || (e.InvolvedObject.UID != "" && e.InvolvedObject.UID != pod.UID) ||
			!slices.Contains(archfilterEventReasons, e.Reason) {
			continue
		}
		last := e.LastTimestamp
		if last.IsZero() {
			last = metav1.NewTime(e.EventTime.Time)
		}
		out = append(out, eventView{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count, Last: last})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Last.Before(&out[j].Last) })
	return out
}

func printWhy(streams genericiooptions.IOStreams, format outputFormat, v *whyView) error {
	if format != outputTable {
		return writeStructured(streams.Out, format, v)
	}
	w := streams.Out
	writeLine(w, "Pod %s/%s (node %s)", v.Namespace, v.Name, orNone(v.NodeName))
	tw := newTable(w)
	fmt.Fprintln(tw, "KIND\tCONTAINER\tIMAGE\tPLATFORMS")
	for _, img := range v.Images {
		ps := setString(img.set)
		if img.Error != "" {
			ps = "error: " + img.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", img.Kind, img.Container, img.Image, ps)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range v.CredentialProblems {
		writeLine(w, "Credentials: skipped %s", p)
	}
	writeLine(w, "Own constraints: %s", v.OwnConstraints)
	runsOn := setString(v.allowed)
	switch {
	case len(v.unresolved()) > 0:
		runsOn = "unknown: an image could not be resolved"
	case !v.judged.read && v.judged.skip != "":
		runsOn = "unknown: images not read (not in archfilter's scope)"
	}
	writeLine(w, "Runs on: %s", runsOn)
	if v.Blocking != "" {
		writeLine(w, "No platform left: %s", v.Blocking)
	}
	printDecision(w, v)
	writeLine(w, "Nodes:")
	tw = newTable(w)
	fmt.Fprintln(tw, "  PLATFORM\tNODES\tCAN RUN\tARCHFILTER\tRULE")
	for _, g := range v.Nodes {
		fmt.Fprintf(tw, "  %s\t%d\t%v\t%s\t%s\n", g.Platform, g.Nodes, g.CanRun, map[bool]string{true: "allows", false: "excludes"}[g.Allowed], g.Rule)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeLine(w, "Events:")
	if len(v.Events) == 0 {
		writeLine(w, "  none recorded (events expire after an hour)")
	}
	for _, e := range v.Events {
		writeLine(w, "  %s %s %s: %s", e.Last.UTC().Format("15:04:05"), e.Type, e.Reason, e.Message)
	}
	if len(v.Running) > 0 {
		writeLine(w, "On its node (as report --running finds it):")
		for _, r := range v.Running {
			writeLine(w, "  %s, container %s: %s", r.Finding, cmp.Or(r.Container, "-"), r.Evidence)
		}
	}
	for _, n := range v.RunningNotes {
		writeLine(w, "Note: container %s (%s): %s", n.Container, n.Image, n.Text)
	}
	for _, e := range v.RunningErrors {
		writeLine(w, "Not checked on its node: %s", e)
	}
	printNewerTags(w, v.NewerTags)
	writeLine(w, "Verdict: %s", v.Verdict.Text)
	return nil
}

// printDecision writes archfilter's decision: the recorded one, which the cluster
// acted on, when the placement mode left one on the pod, and the one re-resolved now.
func printDecision(w io.Writer, v *whyView) {
	d := v.Decision
	f := v.DecidedBy
	switch f.By {
	case frontScheduler, frontPlacement:
		writeLine(w, "Decided by: %s (%s)", f, f.How)
	case frontNone:
		writeLine(w, "Decided by: no front-end of archfilter: %s", f.How)
	default:
		writeLine(w, "Decided by: not known: %s", f.How)
	}
	what := "Decision"
	if f.By == frontNone || !f.known() {
		what = "Decision archfilter would take"
	}
	switch {
	case v.Recorded != nil:
		r := v.Recorded
		writeLine(w, "Decision recorded on the pod by %s at %s, the one the cluster acted on: %s", r.By, r.At.UTC().Format(time.RFC3339), recordSummary(r))
		now := d.summary()
		if recordSummary(&decision.Record{Outcome: d.Outcome, Platforms: d.Platforms, Source: decision.Source(d.Source), Message: d.Message}) == recordSummary(r) {
			writeLine(w, "Re-resolved now: the same")
		} else {
			writeLine(w, "Re-resolved now: %s (differs: the registries answer otherwise now, or the settings differ)", now)
		}
	case v.RecordError != "":
		writeLine(w, "Decision recorded on the pod cannot be read: %s", v.RecordError)
		writeLine(w, "%s, re-resolved now: %s", what, d.summary())
	default:
		writeLine(w, "%s, re-resolved now (none is recorded on the pod): %s", what, d.summary())
	}
	if d.Preferred != "" {
		writeLine(w, "Preferred: %s", d.Preferred)
	}
	if d.Policy != "" {
		writeLine(w, "Policy: %s", d.Policy)
	} else if v.Recorded != nil && v.Recorded.Policy != "" {
		writeLine(w, "Policy: ArchFilterPolicy %s when it was decided (none governs the pod now)", v.Recorded.Policy)
	}
	writeLine(w, "Configuration: %s", orNone(d.Config))
	for _, n := range v.Notes {
		writeLine(w, "Note: %s", n)
	}
}

// recordSummary is a recorded decision in a few words, as decisionView.summary says it.
func recordSummary(r *decision.Record) string {
	return decisionView{Outcome: r.Outcome, Platforms: r.Platforms, Source: string(r.Source), Message: r.Message, Skipped: r.Message}.summary()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

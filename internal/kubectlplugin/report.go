package kubectlplugin

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/distribution/reference"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// report's extra output formats: csv, and wide (the table with every column, as
// kubectl's -o wide).
const (
	outputCSV  outputFormat = "csv"
	outputWide outputFormat = "wide"
)

// readiness is one workload on one of the cluster's node platforms.
type readiness struct {
	Platform string `json:"platform"`
	CanRun   bool   `json:"canRun"`
	// Blocking is the first image (in spec order) that does not run there.
	Blocking string `json:"blocking,omitempty"`
}

// reportRow is one workload's readiness.
type reportRow struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Platforms string `json:"platforms"` // "unknown" while an image could not be resolved
	// Decision is archfilter's decision for the workload's pods, in a few words.
	Decision string `json:"decision"`
	// Policy is the ArchFilterPolicy that governs the workload's pods.
	Policy string      `json:"policy,omitempty"`
	Error  string      `json:"error,omitempty"`
	On     []readiness `json:"on"`
	// DecidedBy is the front-end that decides for its pods, and how that is
	// known (frontEnds.of).
	DecidedBy frontView `json:"decidedBy"`

	// runsNowhere: its images and own constraints leave no platform; noPlatform
	// says why, and names the image by its full reference (wide) or its
	// repository (the default table).
	runsNowhere bool
	noPlatform  func(image func(string) string, wide bool) string
	// skip is why archfilter leaves it alone (unchecked).
	skip string
	// unresolvedImage is the first image that could not be resolved, and why
	// in short.
	unresolvedImage, unresolvedReason string
	// pod is the workload's pod (its template's).
	pod *v1.Pod
	// unchecked: archfilter leaves it alone without reading its images, and so
	// does report.
	unchecked bool
	// errs are the distinct errors of its images that could not be resolved.
	errs []string
}

type reportView struct {
	Platforms []string    `json:"platforms"`
	Workloads []reportRow `json:"workloads"`
	// Totals maps a node platform to the workloads that can run there
	// (Counts.CanRun); Counts are every number report prints.
	Totals map[string]int `json:"totals"`
	Counts reportCounts   `json:"counts"`
	// NewerTags are the searches for a newer tag of each image that blocks a platform.
	NewerTags []newerTagView `json:"newerTags,omitempty"`
	// Running lists the bound pods on a node that cannot run them (running.go).
	Running *runningView `json:"running,omitempty"`
	// Config names the configuration decided with; Notes, what kept the
	// decisions from being the cluster's.
	Config string   `json:"config"`
	Notes  []string `json:"notes,omitempty"`
	// FrontEnds says what the cluster showed about archfilter's front-ends
	// (which scheduler profiles run ArchFilter, whether the placement mode is
	// installed), from which each workload's decidedBy follows.
	FrontEnds []string `json:"frontEnds,omitempty"`

	// allNamespaces: -A, the table has a NAMESPACE column.
	allNamespaces bool
}

// reportCounts are report's numbers, counted once (countReport), so that the
// table's total, the exit status and its message agree. Every workload listed
// is in Workloads and in exactly one of NotChecked, Unresolved, Nowhere and
// Somewhere.
type reportCounts struct {
	Workloads int `json:"workloads"`
	// NotChecked: archfilter leaves them alone without reading their images.
	NotChecked int `json:"notChecked"`
	// Unresolved: an image could not be resolved.
	Unresolved int `json:"unresolved"`
	// Nowhere: they run on none of the cluster's node platforms.
	Nowhere int `json:"nowhere"`
	// Somewhere: they run on at least one.
	Somewhere int `json:"somewhere"`
	// CanRun maps a node platform to the workloads that run there.
	CanRun map[string]int `json:"canRun"`
}

// countReport counts rows: the one computation behind every number report prints.
func countReport(rows []reportRow, platforms []string) reportCounts {
	c := reportCounts{Workloads: len(rows), CanRun: map[string]int{}}
	for _, p := range platforms {
		c.CanRun[p] = 0
	}
	for _, row := range rows {
		switch {
		case row.unchecked:
			c.NotChecked++
			continue
		case row.Error != "":
			c.Unresolved++
			continue
		case row.runsNowhere || (len(row.On) > 0 && !slices.ContainsFunc(row.On, func(r readiness) bool { return r.CanRun })):
			c.Nowhere++
		default:
			c.Somewhere++
		}
		for _, r := range row.On {
			if r.CanRun {
				c.CanRun[r.Platform]++
			}
		}
	}
	return c
}

func newReportCommand(kube *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		reg           registryFlags
		dec           decisionFlags
		output        string
		allNamespaces bool
		running       bool
	)
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Cluster readiness: per workload and node platform, can it run there and which image blocks it",
		Long: `List Deployments, StatefulSets, DaemonSets, Jobs (not those of a CronJob), CronJobs
and pods without a controller, resolve their images (with each workload's namespace's
pull secrets and the local docker config), and say for each platform of the cluster's
nodes whether the workload could run there today, and which image blocks it. Workloads
are judged as archfilter judges them under --args: one it leaves alone without reading
its images (archfilter.io/skip, an excluded or unselected namespace) is listed as not
checked; a declared archfilter.io/platforms annotation stands for its images.

The table fits a terminal: per workload, yes, no, ? (an image could not be resolved)
or - (not checked) per node platform (a Linux one by its architecture), and WHY (the
images that block it, named without their registry; what leaves it no platform; why
it was not checked); the TOTAL row counts the yes of each column. -o wide names images
in full and adds IMAGES RUN ON, DECIDED BY (the front-end that decides for the
workload's pods) and DECISION. Lines on
stderr say which front-end decides and how that is known (the deployed scheduler
configuration, the schedulers' events, the placement mode's webhook), or that it is
not known and which flag tells it (--scheduler-name). Newer tags are looked for only
for images that lack a platform of the cluster's nodes the workload could use (its
own os/arch constraints allow it, and its images are built for that os).

A second section lists the pods already bound to a node that cannot run them (as
--running does, below the table; in JSON and YAML under "running"; not in CSV).

--running reports only those pods: bound pods whose node's platform is not among
their images' platforms (or their archfilter.io/platforms), and containers that
failed with "exec format error" by their status or an event, grouped by the workload
that owns them, with the node and the image (docs/kubectl-plugin.md).

Exit status: 2 when an image could not be resolved or something could not be read
(its error is printed, the other workloads are still reported), else 1 when a
workload runs on none of the cluster's node platforms or a pod is on a node that
cannot run it; 0 otherwise.`,
		Example: `  kubectl archfilter report -A
  kubectl archfilter report -n shop -o csv > shop.csv
  kubectl archfilter report --running -A`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, outputTable, outputWide, outputJSON, outputYAML, outputCSV); err != nil {
				return err
			}
			client, ns, dc, err := clusterSetup(cmd.Context(), kube, &reg, &dec)
			if err != nil {
				return err
			}
			if allNamespaces {
				ns = metav1.NamespaceAll
			}
			table := output == string(outputTable) || output == string(outputWide)
			if running {
				if output == string(outputWide) {
					output = string(outputTable)
				}
				return reportRunning(cmd.Context(), streams, client, ns, &reg, dc, outputFormat(output))
			}
			fe := findFrontEnds(cmd.Context(), client, &dec, dc.namespaces)
			v, err := buildReport(cmd.Context(), client, ns, &reg, dc, progressWriter(streams.ErrOut))
			if err != nil {
				return err
			}
			if v.Running, err = buildRunningObserving(cmd.Context(), client, ns, &reg, dc, fe); err != nil {
				return err
			}
			v.Config, v.Notes = dc.config, dc.notes
			v.allNamespaces = allNamespaces
			decideFronts(v, fe)
			if table {
				defer printDecidedWith(streams.ErrOut, dc, 0)
			}
			if err := printReport(streams.Out, outputFormat(output), v); err != nil {
				return err
			}
			if table && len(v.Running.Findings) > 0 {
				writeLine(streams.Out, "")
				printRunningTable(streams.Out, v.Running)
			}
			if table {
				runningNotes(streams.Out, v.Running)
			}
			for _, row := range v.Workloads {
				for _, e := range row.errs {
					writeLine(streams.ErrOut, "error: %s/%s/%s: %s", row.Kind, row.Namespace, row.Name, e)
				}
			}
			runningErrors(streams.ErrOut, v.Running)
			if table {
				printFronts(streams.ErrOut, v)
			}
			return worstStatus(reportStatus(v), runningStatus(v.Running))
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "report the workloads of every namespace")
	cmd.Flags().BoolVar(&running, "running", false, "report only the bound pods on a node that cannot run them (node platform not among their images', or exec format error)")
	reg.add(cmd)
	addNewerTagsFlag(cmd, &reg)
	dec.add(cmd)
	addOutputFlag(cmd, &output, outputTable, outputWide, outputJSON, outputYAML, outputCSV)
	return cmd
}

// decideFronts says, for each workload, which front-end decides for its pods.
func decideFronts(v *reportView, fe *frontEnds) {
	for i := range v.Workloads {
		v.Workloads[i].DecidedBy = fe.of(v.Workloads[i].pod, nil)
	}
	v.FrontEnds = fe.describe()
}

// printFronts says, after the table, which front-end decides for the
// workloads and how that is known: a line per front-end and scheduler name.
func printFronts(w io.Writer, v *reportView) {
	type group struct {
		f frontView
		n int
	}
	var groups []*group
	for _, row := range v.Workloads {
		i := slices.IndexFunc(groups, func(g *group) bool { return g.f == row.DecidedBy })
		if i < 0 {
			groups = append(groups, &group{f: row.DecidedBy})
			i = len(groups) - 1
		}
		groups[i].n++
	}
	for _, g := range groups {
		workloads := fmt.Sprintf("%d workloads", g.n)
		if g.n == 1 {
			workloads = "1 workload"
		}
		switch g.f.By {
		case frontScheduler, frontPlacement:
			writeLine(w, "info: %s with schedulerName %s, decided by: %s (%s)", workloads, g.f.Scheduler, g.f, g.f.How)
		case frontNone:
			writeLine(w, "info: %s with schedulerName %s, decided by: no front-end of archfilter: %s", workloads, g.f.Scheduler, g.f.How)
		default:
			writeLine(w, "warning: %s with schedulerName %s, decided by: not known: %s", workloads, g.f.Scheduler, g.f.How)
		}
	}
}

// progressWriter returns w when it is a terminal, so that progress lines do not end up
// in logs and pipes.
func progressWriter(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return w
}

// listWorkloads lists the top-level workloads of ns: Jobs of a CronJob and pods of a
// controller are reported as their owner.
func listWorkloads(ctx context.Context, client kubernetes.Interface, ns string) ([]workload, error) {
	var ws []workload
	opts := metav1.ListOptions{}
	apps, batch, core := client.AppsV1(), client.BatchV1(), client.CoreV1()
	err := errors.Join(
		listInto(&ws, "deployments", func() (*appsv1.DeploymentList, error) { return apps.Deployments(ns).List(ctx, opts) },
			func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items }, false),
		listInto(&ws, "statefulsets", func() (*appsv1.StatefulSetList, error) { return apps.StatefulSets(ns).List(ctx, opts) },
			func(l *appsv1.StatefulSetList) []appsv1.StatefulSet { return l.Items }, false),
		listInto(&ws, "daemonsets", func() (*appsv1.DaemonSetList, error) { return apps.DaemonSets(ns).List(ctx, opts) },
			func(l *appsv1.DaemonSetList) []appsv1.DaemonSet { return l.Items }, false),
		listInto(&ws, "cronjobs", func() (*batchv1.CronJobList, error) { return batch.CronJobs(ns).List(ctx, opts) },
			func(l *batchv1.CronJobList) []batchv1.CronJob { return l.Items }, false),
		listInto(&ws, "jobs", func() (*batchv1.JobList, error) { return batch.Jobs(ns).List(ctx, opts) },
			func(l *batchv1.JobList) []batchv1.Job { return l.Items }, true),
		listInto(&ws, "pods", func() (*v1.PodList, error) { return core.Pods(ns).List(ctx, opts) },
			func(l *v1.PodList) []v1.Pod { return l.Items }, true),
	)
	if err != nil {
		return nil, err
	}
	return ws, nil
}

// listInto appends the workloads of one list; ownerless keeps only objects without a
// controller.
func listInto[L any, T any, PT interface {
	*T
	runtime.Object
	metav1.Object
}](ws *[]workload, what string, list func() (L, error), items func(L) []T, ownerless bool) error {
	l, err := list()
	if err != nil {
		return fmt.Errorf("listing %s: %w", what, err)
	}
	objs := items(l)
	for i := range objs {
		obj := PT(&objs[i])
		if ownerless && metav1.GetControllerOf(obj) != nil {
			continue
		}
		if w, ok := workloadOf(obj); ok {
			w.Source = "cluster"
			*ws = append(*ws, w)
		}
	}
	return nil
}

// nodePlatforms returns the distinct platforms of the cluster's nodes, sorted.
func nodePlatforms(ctx context.Context, client kubernetes.Interface) ([]platform.NodePlatform, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	seen := map[string]platform.NodePlatform{}
	for i := range nodes.Items {
		if np, ok := platform.FromNode(&nodes.Items[i]); ok {
			np.WindowsBuild = "" // readiness is per os/arch
			seen[np.String()] = np
		}
	}
	out := make([]platform.NodePlatform, 0, len(seen))
	for _, np := range seen {
		out = append(out, np)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

func buildReport(ctx context.Context, client kubernetes.Interface, ns string, reg *registryFlags, dc *decider, progress io.Writer) (*reportView, error) {
	nps, err := nodePlatforms(ctx, client)
	if err != nil {
		return nil, err
	}
	ws, err := listWorkloads(ctx, client, ns)
	if err != nil {
		return nil, err
	}
	store, err := reg.newStore(ctx, client)
	if err != nil {
		return nil, err
	}
	s, err := reg.newSessionWith(nil, nil)
	if err != nil {
		return nil, &ExitError{Code: ExitInputError, Msg: err.Error()}
	}
	v := &reportView{Workloads: make([]reportRow, len(ws)), Totals: map[string]int{}}
	for _, np := range nps {
		v.Platforms = append(v.Platforms, np.String())
	}
	var (
		g    errgroup.Group
		done atomic.Int32
		mu   sync.Mutex
		// all holds every image's answer, for the newer-tag search.
		all = map[string]resolver.Result{}
	)
	g.SetLimit(maxConcurrentImages)
	for i, w := range ws {
		g.Go(func() error {
			creds := store.ForPod(w.Pod)
			results := map[string]resolver.Result{}
			for _, ref := range dc.images([]workload{w}) {
				results[ref] = s.resolver.Resolve(ctx, resolver.Request{Image: ref, Credentials: creds})
			}
			v.Workloads[i] = readinessOf(w, results, nps, dc)
			mu.Lock()
			maps.Copy(all, results)
			if progress != nil {
				fmt.Fprintf(progress, "\rresolved %d/%d workloads", done.Add(1), len(ws))
			}
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	if progress != nil && len(ws) > 0 {
		fmt.Fprintln(progress)
	}
	v.Counts = countReport(v.Workloads, v.Platforms)
	v.Totals = v.Counts.CanRun
	if reg.newerTags {
		blocked := blockedImages(ws, v.Workloads, all, nps, dc.settings.Compat, func(i int) resolver.Credentials { return store.ForPod(ws[i].Pod) })
		v.NewerTags = findNewerTags(ctx, s, dc.settings.Compat, blocked)
	}
	return v, nil
}

// readinessOf says, per node platform, whether w runs there and else which image is the
// first that does not.
func readinessOf(w workload, results map[string]resolver.Result, nps []platform.NodePlatform, dc *decider) reportRow {
	ev := evaluate(w, results, dc, nil, false)
	compat := dc.settings.Compat
	row := reportRow{Kind: w.Kind, Namespace: w.Pod.Namespace, Name: w.Pod.Name, Platforms: platformsCell(ev), Decision: ev.Decision.summary(), Policy: ev.Decision.Policy, pod: w.Pod}
	if !ev.judged.read && ev.judged.skip != "" {
		row.unchecked, row.skip = true, string(ev.judged.skip)
		row.Platforms = "not checked: " + string(ev.judged.skip)
		for _, np := range nps {
			row.On = append(row.On, readiness{Platform: np.String(), Blocking: "not checked"})
		}
		return row
	}
	// The first image that could not be resolved (in spec order), shortened, for the
	// table: the full errors are in Error and on stderr.
	var unresolved string
	podplatform.ForEachImage(w.Pod, func(img podplatform.Image) bool {
		if err := results[img.Reference].Err; err != nil {
			row.unresolvedImage, row.unresolvedReason = img.Reference, shortError(err)
			unresolved = "cannot resolve " + img.Reference + " (" + shortError(err) + ")"
			return false
		}
		return true
	})
	seen := map[string]bool{}
	for _, img := range ev.Images {
		if img.Error != "" && !seen[img.Error] {
			seen[img.Error] = true
			row.errs = append(row.errs, img.Error)
		}
	}
	row.Error = strings.Join(row.errs, "; ")
	row.runsNowhere = row.Error == "" && ev.allowed.IsEmpty()
	if row.runsNowhere {
		row.noPlatform = noPlatformWhy(w.Pod, results, compat, ev.judged.d.Rejection)
	}
	for _, np := range nps {
		r := readiness{Platform: np.String()}
		// An image that could not be resolved might not run anywhere: not ready.
		r.CanRun, _ = runsOn(ev.allowed, np, compat)
		r.CanRun = r.CanRun && row.Error == ""
		if !r.CanRun {
			r.Blocking = blockedByOwnConstraints
			if pol := ev.judged.policy; pol != nil && pol.Allowed != nil && !pol.Allowed.MatchesNode(np) {
				// Every image may run there, but the pod's ArchFilterPolicy does not
				// allow it (decision.Settings.Exclusion's order: images, then policy).
				r.Blocking = "ArchFilterPolicy " + pol.Key()
			}
			if unresolved != "" {
				r.Blocking = unresolved
			}
			podplatform.ForEachImage(w.Pod, func(img podplatform.Image) bool {
				res := results[img.Reference]
				if res.Err == nil && !compat.Expand(res.Platforms).MatchesNode(np) {
					r.Blocking = img.Reference
					return false
				}
				return true
			})
		}
		row.On = append(row.On, r)
	}
	return row
}

func printReport(w io.Writer, format outputFormat, v *reportView) error {
	switch format {
	case outputJSON, outputYAML:
		return writeStructured(w, format, v)
	case outputCSV:
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"kind", "namespace", "name", "platforms", "node_platform", "can_run", "blocking", "error", "decision", "newer_tag"})
		for _, row := range v.Workloads {
			for _, r := range row.On {
				_ = cw.Write([]string{row.Kind, row.Namespace, row.Name, row.Platforms, r.Platform, strconv.FormatBool(r.CanRun), r.Blocking, row.Error, row.Decision, newerTagFor(v.NewerTags, r.Blocking, r.Platform)})
			}
		}
		cw.Flush()
		return cw.Error()
	}
	return printReportTable(w, v, format == outputWide)
}

// printReportTable prints the table: per workload yes or no per node platform,
// and why not, to fit a terminal of 80 to 120 columns; wide adds the platforms
// its images run on, the decision and who decides, and names images by their
// full reference (the default table leaves out the registry).
func printReportTable(w io.Writer, v *reportView, wide bool) error {
	image := shortImage
	if wide {
		image = func(ref string) string { return ref }
	}
	tw := newTrimmedTable(w)
	var header []string
	if v.allNamespaces {
		header = append(header, "NAMESPACE")
	}
	header = append(header, "WORKLOAD")
	if wide {
		header = append(header, "IMAGES RUN ON")
	}
	for _, p := range v.Platforms {
		header = append(header, platformColumn(p, wide))
	}
	header = append(header, "WHY")
	if wide {
		header = append(header, "DECIDED BY", "DECISION")
	}
	tw.row(header...)
	for _, row := range v.Workloads {
		var cells []string
		if v.allNamespaces {
			cells = append(cells, row.Namespace)
		}
		cells = append(cells, row.Kind+"/"+row.Name)
		if wide {
			platforms := row.Platforms
			if row.unchecked {
				platforms = "not checked"
			}
			cells = append(cells, platforms)
		}
		for _, r := range row.On {
			cells = append(cells, readinessCell(row, r, wide))
		}
		cells = append(cells, reportWhy(row, image, wide))
		if wide {
			by := row.DecidedBy.By
			if by == frontScheduler {
				by += " " + row.DecidedBy.Scheduler
			}
			cells = append(cells, by, row.Decision)
		}
		tw.row(cells...)
	}
	c := countReport(v.Workloads, v.Platforms)
	var total []string
	if v.allNamespaces {
		total = append(total, "")
	}
	workloads := fmt.Sprintf("TOTAL (%d workloads)", c.Workloads)
	if c.Workloads == 1 {
		workloads = "TOTAL (1 workload)"
	}
	total = append(total, workloads)
	if wide {
		total = append(total, "")
	}
	for _, p := range v.Platforms {
		total = append(total, strconv.Itoa(c.CanRun[p]))
	}
	var rest []string
	for _, part := range []struct {
		n    int
		what string
	}{{c.Nowhere, "on no node"}, {c.Unresolved, "unresolved"}, {c.NotChecked, "not checked"}} {
		if part.n > 0 {
			rest = append(rest, fmt.Sprintf("%d %s", part.n, part.what))
		}
	}
	total = append(total, strings.Join(rest, ", "))
	tw.row(total...)
	if err := tw.flush(); err != nil {
		return err
	}
	printNewerTags(w, v.NewerTags)
	return nil
}

// readinessCell is a workload's cell for one node platform: yes, no (wide:
// and the image that blocks it), ? when an image could not be resolved, - when
// it was not checked.
func readinessCell(row reportRow, r readiness, wide bool) string {
	switch {
	case row.unchecked:
		return "-"
	case r.CanRun:
		return "yes"
	case row.Error != "":
		return "?"
	case wide:
		return "no: " + r.Blocking
	}
	return "no"
}

// platformColumn is a node platform's column header: its architecture for a
// Linux platform in the default table ("ARM64"), else the platform
// ("WINDOWS/AMD64"; in -o wide every one, "LINUX/ARM64").
func platformColumn(p string, wide bool) string {
	if arch, ok := strings.CutPrefix(p, "linux/"); ok && !wide {
		p = arch
	}
	return strings.ToUpper(p)
}

// reportWhy is the WHY cell: what keeps the workload off the node platforms it
// does not run on, or why it was not checked; image names an image, and wide
// says the decision's rejection in full.
func reportWhy(row reportRow, image func(string) string, wide bool) string {
	switch {
	case row.unchecked:
		return "not checked: " + row.skip
	case row.unresolvedImage != "":
		return "cannot resolve " + image(row.unresolvedImage) + " (" + row.unresolvedReason + ")"
	case row.Error != "":
		return "cannot resolve its images"
	case row.runsNowhere && row.noPlatform != nil:
		return row.noPlatform(image, wide)
	}
	var blocking []string
	for _, r := range row.On {
		if !r.CanRun && r.Blocking != "" {
			b := r.Blocking
			if b != blockedByOwnConstraints && !strings.HasPrefix(b, "ArchFilterPolicy ") {
				b = image(b)
			}
			if !slices.Contains(blocking, b) {
				blocking = append(blocking, b)
			}
		}
	}
	return strings.Join(blocking, ", ")
}

// blockedByOwnConstraints blocks a node platform that every image runs on.
const blockedByOwnConstraints = "its own os/arch constraints"

// noPlatformWhy says why a workload runs on no platform at all: the image
// that leaves its images no platform in common, or the decision's rejection
// (in short unless wide).
func noPlatformWhy(pod *v1.Pod, results map[string]resolver.Result, compat platform.Compat, rejection *decision.Rejection) func(func(string) string, bool) string {
	img, _, ok := podplatform.Emptying(pod, func(i podplatform.Image) (platform.Set, bool) {
		res, known := results[i.Reference]
		if !known || res.Err != nil {
			return platform.Set{}, false
		}
		return compat.Expand(res.Platforms), true
	})
	return func(image func(string) string, wide bool) string {
		switch {
		case ok:
			return "no common platform: " + image(img.Reference)
		case rejection == nil:
			return "no platform is left"
		case wide:
			return rejection.Message
		}
		switch rejection.Kind {
		case decision.RejectOwnConstraintConflict:
			return "its own os/arch constraints exclude its images' platforms"
		case decision.RejectNotAllowedByPolicy:
			return "its ArchFilterPolicy allows none of its images' platforms"
		case decision.RejectInvalidAnnotation:
			return "invalid archfilter annotation (-o wide says which)"
		}
		return rejection.Message
	}
}

// shortImage is an image reference without its registry, for the default
// table: "127.0.0.1:5000/shop/api:v2" is "shop/api:v2", Docker Hub's
// "docker.io/library/nginx:1.27" is "nginx:1.27", and a digest is cut to 12
// hex digits. -o wide, csv, json and yaml keep the full reference.
func shortImage(ref string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	s := reference.Path(named)
	if reference.Domain(named) == "docker.io" {
		s = reference.FamiliarName(named)
	}
	if t, ok := named.(reference.Tagged); ok {
		s += ":" + t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		s += "@" + shortDigest(d.Digest().String())
	}
	return s
}

// reportStatus is report's exit status (root.go): ExitInputError when a workload's image
// could not be resolved, else ExitFailed when a workload runs on none of the cluster's
// node platforms (or on no platform at all).
func reportStatus(v *reportView) error {
	c := countReport(v.Workloads, v.Platforms)
	switch {
	case c.Unresolved > 0:
		return &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("%d of %d workloads have images that could not be resolved", c.Unresolved, c.Workloads)}
	case c.Nowhere > 0:
		return &ExitError{Code: ExitFailed, Msg: fmt.Sprintf("%d of %d workloads run on none of the cluster's node platforms", c.Nowhere, c.Workloads)}
	}
	return nil
}

// shortError is a resolution failure for a table cell: its reason and HTTP status
// ("NotFound, HTTP 404", "Unreachable"), without the image and the transport's details.
func shortError(err error) string {
	var re *resolver.Error
	if !errors.As(err, &re) {
		return err.Error()
	}
	s := string(re.Reason)
	if re.StatusCode != 0 {
		s += fmt.Sprintf(", HTTP %d", re.StatusCode)
	}
	if re.Reason == resolver.ReasonUnauthorized {
		s += ", " + re.CredentialSource + " credentials"
	}
	return s
}

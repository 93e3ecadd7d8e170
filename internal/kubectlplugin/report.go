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

	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

const outputCSV outputFormat = "csv"

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

	// runsNowhere: its images and own constraints leave no platform.
	runsNowhere bool
	// unchecked: archfilter leaves it alone without reading its images, and so
	// does report.
	unchecked bool
	// errs are the distinct errors of its images that could not be resolved.
	errs []string
}

type reportView struct {
	Platforms []string       `json:"platforms"`
	Workloads []reportRow    `json:"workloads"`
	Totals    map[string]int `json:"totals"` // node platform → workloads that can run there
	// NewerTags are the searches for a newer tag of each image that blocks a platform.
	NewerTags []newerTagView `json:"newerTags,omitempty"`
	// Running lists the bound pods on a node that cannot run them (running.go).
	Running *runningView `json:"running,omitempty"`
	// Config names the configuration decided with; Notes, what kept the
	// decisions from being the cluster's.
	Config string   `json:"config"`
	Notes  []string `json:"notes,omitempty"`
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
			if err := checkOutput(output, outputTable, outputJSON, outputYAML, outputCSV); err != nil {
				return err
			}
			client, ns, dc, err := clusterSetup(cmd.Context(), kube, &reg, &dec)
			if err != nil {
				return err
			}
			if allNamespaces {
				ns = metav1.NamespaceAll
			}
			if running {
				return reportRunning(cmd.Context(), streams, client, ns, &reg, dc, outputFormat(output))
			}
			v, err := buildReport(cmd.Context(), client, ns, &reg, dc, progressWriter(streams.ErrOut))
			if err != nil {
				return err
			}
			if v.Running, err = buildRunning(cmd.Context(), client, ns, &reg, dc); err != nil {
				return err
			}
			v.Config, v.Notes = dc.config, dc.notes
			if output == string(outputTable) {
				defer printDecidedWith(streams.ErrOut, dc, 0)
			}
			if err := printReport(streams.Out, outputFormat(output), v); err != nil {
				return err
			}
			if output == string(outputTable) && len(v.Running.Findings) > 0 {
				writeLine(streams.Out, "")
				printRunningTable(streams.Out, v.Running)
			}
			if output == string(outputTable) {
				runningNotes(streams.Out, v.Running)
			}
			for _, row := range v.Workloads {
				for _, e := range row.errs {
					writeLine(streams.ErrOut, "error: %s/%s/%s: %s", row.Kind, row.Namespace, row.Name, e)
				}
			}
			runningErrors(streams.ErrOut, v.Running)
			return worstStatus(reportStatus(v), runningStatus(v.Running))
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "report the workloads of every namespace")
	cmd.Flags().BoolVar(&running, "running", false, "report only the bound pods on a node that cannot run them (node platform not among their images', or exec format error)")
	reg.add(cmd)
	addNewerTagsFlag(cmd, &reg)
	dec.add(cmd)
	addOutputFlag(cmd, &output, outputTable, outputJSON, outputYAML, outputCSV)
	return cmd
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
	for _, row := range v.Workloads {
		for _, r := range row.On {
			if r.CanRun {
				v.Totals[r.Platform]++
			}
		}
	}
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
	row := reportRow{Kind: w.Kind, Namespace: w.Pod.Namespace, Name: w.Pod.Name, Platforms: platformsCell(ev), Decision: ev.Decision.summary(), Policy: ev.Decision.Policy}
	if !ev.judged.read && ev.judged.skip != "" {
		row.unchecked = true
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
	for _, np := range nps {
		r := readiness{Platform: np.String()}
		// An image that could not be resolved might not run anywhere: not ready.
		r.CanRun, _ = runsOn(ev.allowed, np, compat)
		r.CanRun = r.CanRun && row.Error == ""
		if !r.CanRun {
			r.Blocking = "its own os/arch constraints"
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
	tw := newTable(w)
	fmt.Fprint(tw, "WORKLOAD\tIMAGES RUN ON")
	for _, p := range v.Platforms {
		fmt.Fprint(tw, "\t"+strings.ToUpper(p))
	}
	fmt.Fprintln(tw)
	for _, row := range v.Workloads {
		fmt.Fprintf(tw, "%s/%s/%s\t%s", row.Kind, row.Namespace, row.Name, row.Platforms)
		for _, r := range row.On {
			cell := "yes"
			switch {
			case row.unchecked:
				cell = "-"
			case !r.CanRun:
				cell = "no: " + r.Blocking
			}
			fmt.Fprint(tw, "\t"+cell)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "TOTAL (%d workloads)\t", len(v.Workloads)-unchecked(v))
	for _, p := range v.Platforms {
		fmt.Fprintf(tw, "\t%d can run", v.Totals[p])
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	printNewerTags(w, v.NewerTags)
	return nil
}

// unchecked counts the workloads report did not check.
func unchecked(v *reportView) int {
	n := 0
	for _, row := range v.Workloads {
		if row.unchecked {
			n++
		}
	}
	return n
}

// reportStatus is report's exit status (root.go): ExitInputError when a workload's image
// could not be resolved, else ExitFailed when a workload runs on none of the cluster's
// node platforms (or on no platform at all).
func reportStatus(v *reportView) error {
	unresolved, nowhere := 0, 0
	for _, row := range v.Workloads {
		switch {
		case row.unchecked:
		case row.Error != "":
			unresolved++
		case row.runsNowhere || (len(row.On) > 0 && !slices.ContainsFunc(row.On, func(r readiness) bool { return r.CanRun })):
			nowhere++
		}
	}
	switch {
	case unresolved > 0:
		return &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("%d of %d workloads have images that could not be resolved", unresolved, len(v.Workloads))}
	case nowhere > 0:
		return &ExitError{Code: ExitFailed, Msg: fmt.Sprintf("%d of %d workloads run on none of the cluster's node platforms", nowhere, len(v.Workloads))}
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

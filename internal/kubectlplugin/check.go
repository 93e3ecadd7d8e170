package kubectlplugin

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/placement"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// workloadImage is one image of a workload and what its registry says.
type workloadImage struct {
	Kind      podplatform.ContainerKind `json:"kind"`
	Container string                    `json:"container"`
	Image     string                    `json:"image"`
	Digest    string                    `json:"digest,omitempty"`
	setView
	Error string `json:"error,omitempty"`
	// NotRead says why the image was not read from its registry: archfilter
	// does not read it either (the pod declares its platforms, or is not in scope).
	NotRead string `json:"notRead,omitempty"`

	set platform.Set
}

// workloadView is what check prints for one workload.
type workloadView struct {
	Source    string `json:"source"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Platforms are those every image runs on (or the pod declares), within the
	// workload's own os/arch constraints; any when archfilter leaves it alone
	// without reading its images.
	Platforms setView `json:"platforms"`
	// Decision is what archfilter decides for the workload's pods.
	Decision decisionView `json:"decision"`
	// Blocking says what leaves no platform: the image that empties the intersection of
	// the images before it, or the workload's own constraints.
	Blocking string `json:"blocking,omitempty"`
	// Unsupported are the --platforms it cannot run on.
	Unsupported []string `json:"unsupported,omitempty"`
	// Nowhere says, when check judges against the cluster's nodes, that none of them
	// runs the workload: its platforms and theirs.
	Nowhere string `json:"nowhere,omitempty"`
	// Lint are the mistakes in its archfilter.io/ annotations (package decision's
	// LintAnnotations, and LintWorkloadAnnotations for the workload's own metadata);
	// an error fails the workload.
	Lint     []decision.Finding `json:"lint,omitempty"`
	Images   []workloadImage    `json:"images"`
	Affinity *v1.Affinity       `json:"affinity,omitempty"`
	Failed   bool               `json:"failed"`

	allowed platform.Set
	judged  judgement
	// rejection is the kind of archfilter's rejection when Blocking is its message,
	// "" when Blocking names the image that empties the intersection.
	rejection string
}

// checkTarget is what check judged the workloads against: --platforms, the platforms
// of the nodes of the kubeconfig's cluster, or nothing (no cluster answered, or it has
// no nodes), when it checks only that each workload's images share a platform.
type checkTarget struct {
	// Source is "platforms" (--platforms), "cluster" (its nodes) or "none".
	Source string `json:"source"`
	// Platforms are --platforms, or the distinct platforms of the cluster's nodes.
	Platforms []string `json:"platforms,omitempty"`
	// Context is the kubeconfig context of the cluster whose nodes were read.
	Context string `json:"context,omitempty"`
	// Reason says why no node platform was read, when none was.
	Reason string `json:"reason,omitempty"`
	// Summary is the line check prints after its tables.
	Summary string `json:"summary"`

	nodes []platform.NodePlatform
	// unread: a cluster was there to ask, or named, and could not be read.
	unread bool
}

const (
	targetPlatforms = "platforms"
	targetCluster   = "cluster"
	targetNone      = "none"
)

type checkOptions struct {
	files        []string
	platforms    string
	emitAffinity bool
	output       string
	reg          registryFlags
	dec          decisionFlags
	configs      configFlags
	deep         deepFlags
}

func newCheckCommand(kube *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "check -f FILE|DIR|-",
		Short: "Check that every workload runs on the cluster's nodes (or on --platforms) before it is applied",
		Long: `Read Pods, Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs
(multi-document YAML or JSON, v1 Lists included) from files, directories or stdin,
resolve every image of each pod template and print the platforms the workload can
run on: those all its images share (or its archfilter.io/platforms annotation
declares), within its own nodeSelector, spec.os and required node affinity, and
what archfilter decides for it under --args (the settings the cluster runs with):
a workload archfilter leaves alone (archfilter.io/skip, an excluded namespace, a
namespace the namespaceSelector does not select, a DaemonSet pod under
daemonSetPolicy Skip) is said so, and its images are not resolved, as archfilter
does not resolve them (DaemonSet pods' are, as the scheduler warns by them).
With a namespaceSelector, namespaces' labels are read from the cluster of the
kubeconfig. Other known kinds are skipped.

What each workload is checked against, named on the summary line after the table
(and under "checkedAgainst" in -o json|yaml):
  --platforms, when given: it must run on each of them;
  else the cluster of the kubeconfig, when it answers within a few seconds: it must
  run on the platform (kubernetes.io/os and kubernetes.io/arch) of at least one of
  its nodes, as report reads them;
  else nothing: with no cluster (a CI job) or a cluster without nodes (one that
  scales from zero), check can only check that each workload's images share a
  platform, not that any node runs them, and the summary line says so:
  "no cluster, no --platforms: checked only that each workload's images share a
  platform". In CI, give --platforms.

Each workload's archfilter.io/ annotations are checked as the scheduler and the
placement mode check them: an unknown key (with the nearest known one), an
archfilter.io/skip that is not true or false, a platform list that does not parse
(a syntax error, with the form and the list probably meant) or names an os or
architecture no container runtime knows. An error (a declaration archfilter
rejects, or one no node can match) fails the workload; warnings are listed below
the table.

An image pinned by the digest of one platform's manifest, where a tag of its
repository names an index of several platforms that lists it, is warned about: the
pod runs on that one platform only. Each platform an image's index lists has its
config read and compared with what the index claims (--check-config=false skips it).
With --deep, each platform's executable is read from the image's layers and its header
compared with the platform the manifest claims.

Exit status: 2 when a file or document could not be read (unknown kind, malformed), an
image could not be resolved (each is named, the other workloads are still checked), a
platform's config could not be read, or --deep could not read an image's executable,
else 1 when a workload's images share no platform, a workload cannot run on one of
--platforms (or, without them, runs on none of the cluster's node platforms), an
archfilter.io/ annotation is an error,
a platform's config contradicts its index entry, or --deep finds a binary that
contradicts its manifest or an entrypoint missing from the image; 0 otherwise.`,
		Example: `  kubectl archfilter check -f deploy.yaml
  helm template ./chart | kubectl archfilter check -f - --platforms linux/amd64,linux/arm64
  kubectl archfilter check -f manifests/ --emit-affinity`,
		Args: checkArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), kube, streams)
		},
	}
	cmd.Flags().StringSliceVarP(&o.files, "filename", "f", nil, "file, directory (its .yaml, .yml and .json files, recursively) or - for stdin (repeatable)")
	cmd.Flags().StringVar(&o.platforms, "platforms", "", "comma-separated os/arch[/variant] every workload must run on, e.g. linux/amd64,linux/arm64")
	cmd.Flags().BoolVar(&o.emitAffinity, "emit-affinity", false, "print the node affinity that pins each workload to its platforms")
	o.reg.add(cmd)
	o.dec.add(cmd)
	o.configs.add(cmd)
	o.deep.add(cmd)
	addOutputFlag(cmd, &o.output, outputTable, outputJSON, outputYAML)
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// checkArgs refuses arguments, naming the -f each file needs, and a check without -f.
func checkArgs(cmd *cobra.Command, args []string) error {
	files, _ := cmd.Flags().GetStringSlice("filename")
	if len(args) > 0 {
		return &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("check reads files with -f: kubectl archfilter check -f %s", strings.Join(append(files, args...), " -f "))}
	}
	if len(files) == 0 {
		return &ExitError{Code: ExitInputError, Msg: "check needs the manifests to check: kubectl archfilter check -f FILE|DIR|- (- reads stdin, e.g. helm template ./chart | kubectl archfilter check -f -)"}
	}
	return nil
}

// parseRequired reads --platforms; its errors say what is wrong and what was probably
// meant.
func parseRequired(value string) ([]platform.Platform, error) {
	if strings.TrimSpace(value) == "*" {
		return nil, &ExitError{Code: ExitInputError, Msg: `--platforms "*": name the platforms every workload must run on, e.g. --platforms linux/amd64,linux/arm64`}
	}
	if msg := platform.DescribeList(value); msg != "" {
		return nil, &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("--platforms %q: %s", value, msg)}
	}
	set, err := platform.ParseList(value)
	if err != nil {
		return nil, &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("--platforms %q: %v", value, err)}
	}
	return set.Platforms(), nil
}

// loadSettings reads --args; without it, the configuration of the cluster
// of the kubeconfig when one answered (client; cerr says why none did), else the
// defaults (check runs in CI, without a cluster).
func (o *checkOptions) loadSettings(ctx context.Context, client kubernetes.Interface, cerr error) (*decision.Settings, *config.ArchFilterArgs, error) {
	if o.dec.argsFile != "" {
		return o.dec.load()
	}
	if cerr != nil {
		s, args, lerr := o.dec.load()
		o.dec.source = "the plugin's defaults (no cluster to read archfilter's configuration from; --args names one)"
		return s, args, lerr
	}
	return o.dec.loadFromCluster(ctx, client)
}

// target decides what the workloads are checked against: --platforms (required),
// else the platforms of the cluster's nodes, listed as report lists them
// (nodePlatforms), else nothing.
func (o *checkOptions) target(ctx context.Context, kube *genericclioptions.ConfigFlags, client kubernetes.Interface, cerr error, required []platform.Platform) checkTarget {
	if len(required) > 0 {
		names := make([]string, len(required))
		for i, p := range required {
			names[i] = p.String()
		}
		return checkTarget{Source: targetPlatforms, Platforms: names, Summary: "checked against --platforms " + strings.Join(names, ",")}
	}
	const only = "checked only that each workload's images share a platform, not that a node runs it; --platforms (e.g. linux/amd64,linux/arm64) names the platforms to require"
	if cerr != nil {
		return checkTarget{Source: targetNone, Reason: cerr.Error(), Summary: "no cluster, no --platforms: " + only, unread: namesCluster(kube)}
	}
	t := checkTarget{Source: targetNone, Context: contextName(kube)}
	nps, err := nodePlatforms(ctx, client)
	switch {
	case err != nil:
		t.Reason, t.unread = err.Error(), namesCluster(kube)
		t.Summary = "the cluster's nodes could not be read, no --platforms: " + only
	case len(nps) == 0:
		t.Reason = "the cluster has no node that reports a platform (kubernetes.io/os and kubernetes.io/arch)"
		t.Summary = "no node in the cluster" + inContext(t.Context) + ", no --platforms: " + only
	default:
		t.Source, t.nodes = targetCluster, nps
		for _, np := range nps {
			t.Platforms = append(t.Platforms, np.String())
		}
		t.Summary = "checked against the platforms of the cluster's nodes" + inContext(t.Context) + ": " + strings.Join(t.Platforms, ", ")
	}
	return t
}

// namesCluster reports whether the command line names a cluster (--kubeconfig,
// --context, --cluster, --server): one that cannot be read then leaves check's
// question unanswered, where a CI job without any cluster is the usual case.
func namesCluster(kube *genericclioptions.ConfigFlags) bool {
	for _, f := range []*string{kube.KubeConfig, kube.Context, kube.ClusterName, kube.APIServer} {
		if f != nil && *f != "" {
			return true
		}
	}
	return false
}

// contextName is the kubeconfig context the commands use: --context, else the
// current one; "" when the kubeconfig names none.
func contextName(kube *genericclioptions.ConfigFlags) string {
	if kube.Context != nil && *kube.Context != "" {
		return *kube.Context
	}
	raw, err := kube.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}

func inContext(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" (context %q)", name)
}

// clusterConfigTimeout bounds check's look for the cluster's configuration.
const clusterConfigTimeout = 5 * time.Second

func (o *checkOptions) run(ctx context.Context, kube *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) error {
	if err := checkOutput(o.output, outputTable, outputJSON, outputYAML); err != nil {
		return err
	}
	var required []platform.Platform
	if o.platforms != "" {
		r, err := parseRequired(o.platforms)
		if err != nil {
			return err
		}
		required = r
	}
	if err := o.deep.parse(); err != nil {
		return err
	}
	// One look at the cluster, bounded: a CI job has none.
	client, _, cerr := clusterClient(kube)
	cctx, cancel := context.WithTimeout(ctx, clusterConfigTimeout)
	settings, args, err := o.loadSettings(cctx, client, cerr)
	if err != nil {
		cancel()
		return err
	}
	target := o.target(cctx, kube, client, cerr, required)
	cancel()
	o.reg.args = args
	dc := &decider{settings: settings, config: o.dec.source}
	if settings.NamespaceSelector != nil {
		if cerr != nil {
			return &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("%s has a namespaceSelector, which needs the namespaces' labels from the cluster: %v", o.dec.source, cerr)}
		}
		dc.namespaces = clusterNamespaces(ctx, client)
	}
	workloads, policies, inputErrs := readWorkloads(o.files, streams.In)
	for _, e := range inputErrs {
		writeLine(streams.ErrOut, "error: %v", e)
	}
	if len(policies) > 0 && settings.PoliciesEnabled {
		// A policy without a namespace governs the workloads without one.
		var perrs []error
		dc.policies, perrs = filePolicies(policies, "")
		for _, e := range perrs {
			writeLine(streams.ErrOut, "error: %v", e)
		}
	}
	if f := outputFormat(o.output); f == outputTable {
		defer func() { printDecidedWith(streams.ErrOut, dc, len(policies)) }()
	}
	s, err := o.reg.newSession(ctx, connector(kube))
	if err != nil {
		return &ExitError{Code: ExitInputError, Msg: err.Error()}
	}
	for _, p := range s.problems {
		writeLine(streams.ErrOut, "warning: credentials: %s", p)
	}
	results := resolveAll(ctx, s, dc.images(workloads))
	views := make([]workloadView, len(workloads))
	failed, unresolved := 0, 0
	for i, w := range workloads {
		views[i] = evaluate(w, results, dc, required, o.emitAffinity)
		judgeNodes(&views[i], target.nodes, dc.settings.Compat)
		lint(&views[i], w)
		switch {
		case len(views[i].unresolved()) > 0:
			unresolved++
		case views[i].Failed:
			failed++
		}
	}
	found := checkFindings(ctx, s, workloads, views, o.configs, o.deep)
	if err := printWorkloads(streams, outputFormat(o.output), views, o.emitAffinity, found, target); err != nil {
		return err
	}
	binFailed, binUnanswered := found.status()
	cfgFailed, cfgUnanswered := configStatus(found.Configs)
	failed += binFailed + cfgFailed
	var unanswered []string
	if len(inputErrs) > 0 {
		unanswered = append(unanswered, fmt.Sprintf("%d documents could not be read", len(inputErrs)))
	}
	if unresolved > 0 {
		unanswered = append(unanswered, fmt.Sprintf("%d of %d workloads have images that could not be resolved", unresolved, len(views)))
	}
	if cfgUnanswered > 0 {
		unanswered = append(unanswered, fmt.Sprintf("%d config checks could not be answered", cfgUnanswered))
	}
	if binUnanswered > 0 {
		unanswered = append(unanswered, fmt.Sprintf("%d binary checks could not be answered", binUnanswered))
	}
	if target.unread {
		unanswered = append(unanswered, "no node platform was checked: "+target.Reason)
	}
	switch {
	case len(unanswered) > 0:
		return &ExitError{Code: ExitInputError, Msg: strings.Join(unanswered, "; ")}
	case failed > 0:
		return &ExitError{Code: ExitFailed, Msg: checkFailedMessage(failed-binFailed-cfgFailed, len(views), cfgFailed, binFailed)}
	}
	return nil
}

// evaluate judges w as archfilter does (package decision) and intersects the
// platforms of its images, in spec order, naming the image that leaves none: it is
// listed first.
func evaluate(w workload, results map[string]resolver.Result, dc *decider, required []platform.Platform, emitAffinity bool) workloadView {
	j := dc.judge(w.Pod, results)
	v := workloadView{Source: w.Source, Kind: w.Kind, Namespace: w.Pod.Namespace, Name: w.Pod.Name, Images: []workloadImage{}, Decision: dc.view(w.Pod, &j), judged: j}
	common := platform.Any()
	blocking := -1
	var resolveErrs []string
	podplatform.ForEachImage(w.Pod, func(img podplatform.Image) bool {
		wi := workloadImage{Kind: img.Kind, Container: img.Name, Image: img.Reference}
		if !j.read {
			wi.NotRead = notRead(&j)
			v.Images = append(v.Images, wi)
			return true
		}
		res := results[img.Reference]
		wi.Digest = res.Digest
		if res.Err != nil {
			wi.Error = res.Err.Error()
			resolveErrs = append(resolveErrs, img.Reference)
		} else {
			wi.setView, wi.set = viewOf(res.Platforms), res.Platforms
			next := common.Intersect(dc.settings.Compat.Expand(res.Platforms))
			if blocking < 0 && next.IsEmpty() {
				blocking = len(v.Images)
				v.Blocking = fmt.Sprintf("%s runs on %s only; the images before it on %s",
					img, setString(res.Platforms), setString(common))
			}
			common = next
		}
		v.Images = append(v.Images, wi)
		return true
	})
	if blocking > 0 {
		b := v.Images[blocking]
		v.Images = append([]workloadImage{b}, append(v.Images[:blocking:blocking], v.Images[blocking+1:]...)...)
	}
	allowed := platform.Any()
	if j.skip == "" || j.skip.ReadsImages() {
		allowed = j.d.Platforms
		if r := j.d.Rejection; r != nil {
			allowed = platform.NewSet()
			if v.Blocking == "" || r.Kind == decision.RejectInvalidAnnotation {
				v.Blocking, v.rejection = r.Message, r.Kind
			}
		}
	}
	v.Platforms, v.allowed = viewOf(allowed), allowed
	for _, p := range required {
		if allowed.Intersect(platform.NewSet(p)).IsEmpty() {
			v.Unsupported = append(v.Unsupported, p.String())
		}
	}
	v.Failed = len(resolveErrs) > 0 || allowed.IsEmpty() || len(v.Unsupported) > 0
	if emitAffinity && len(resolveErrs) == 0 && !allowed.IsEmpty() && !allowed.IsAny() {
		// The pod's own affinity is left out, so the block is the one to add by hand.
		bare := w.Pod.DeepCopy()
		bare.Spec.Affinity = nil
		if aff, err := placement.Merge(bare, allowed, nil); err == nil && aff != nil {
			v.Affinity = aff
		}
	}
	return v
}

// notRead says why archfilter does not read a pod's images.
func notRead(j *judgement) string {
	if j.skip != "" {
		return "not in archfilter's scope: " + string(j.skip)
	}
	return "platforms declared by " + string(decision.SourceAnnotation)
}

func printWorkloads(streams genericiooptions.IOStreams, format outputFormat, views []workloadView, emitAffinity bool, found findings, target checkTarget) error {
	if format != outputTable {
		doc := map[string]any{"workloads": views, "checkedAgainst": target}
		found.addTo(doc)
		return writeStructured(streams.Out, format, doc)
	}
	tw := newTable(streams.Out)
	fmt.Fprintln(tw, "SOURCE\tWORKLOAD\tPLATFORMS\tRESULT")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Source, workloadName(v), platformsCell(v), checkResult(v))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeLine(streams.Out, "%s", target.Summary)
	if target.Reason != "" && !target.unread {
		// A cluster named on the command line that could not be read is an error, said last.
		writeLine(streams.ErrOut, "info: %s", target.Reason)
	}
	if err := printLint(streams.Out, views); err != nil {
		return err
	}
	if err := found.printTables(streams.Out); err != nil {
		return err
	}
	for _, v := range views {
		for _, img := range v.unresolved() {
			writeLine(streams.ErrOut, "error: %s %s: %s", workloadName(v), img.Container, img.Error)
		}
	}
	if !emitAffinity {
		return nil
	}
	for _, v := range views {
		if v.Affinity == nil {
			continue
		}
		writeLine(streams.Out, "---\n# %s (%s): spec.template.spec.affinity", workloadName(v), v.Source)
		if err := writeStructured(streams.Out, outputYAML, map[string]any{"affinity": v.Affinity}); err != nil {
			return err
		}
	}
	return nil
}

// unresolved returns the images of v that could not be resolved: while there are any,
// the others' platforms say nothing of where v runs.
func (v workloadView) unresolved() []workloadImage {
	var out []workloadImage
	for _, img := range v.Images {
		if img.Error != "" {
			out = append(out, img)
		}
	}
	return out
}

func workloadName(v workloadView) string {
	if v.Namespace == "" {
		return v.Kind + "/" + v.Name
	}
	return v.Kind + "/" + v.Namespace + "/" + v.Name
}

// platformsCell is the workload's platforms for a table, "unknown" while an image could
// not be resolved: the others' intersection would claim too much.
func platformsCell(v workloadView) string {
	if len(v.unresolved()) > 0 {
		return "unknown"
	}
	return setString(v.allowed)
}

// judgeNodes fails v when none of the cluster's node platforms runs it, judged as
// report judges a workload per node platform (runsOn). Nothing to judge without nodes,
// while an image is unresolved, or when nothing is left anyway (Blocking says why).
func judgeNodes(v *workloadView, nodes []platform.NodePlatform, compat platform.Compat) {
	if len(nodes) == 0 || len(v.unresolved()) > 0 || v.allowed.IsEmpty() {
		return
	}
	names := make([]string, len(nodes))
	for i, np := range nodes {
		if ok, _ := runsOn(v.allowed, np, compat); ok {
			return
		}
		names[i] = np.String()
	}
	v.Nowhere = fmt.Sprintf("no node of the cluster runs it: it runs on %s, the nodes on %s", setString(v.allowed), strings.Join(names, ", "))
	v.Failed = true
}

// lint adds the mistakes in w's archfilter.io/ annotations to v: an error fails it.
func lint(v *workloadView, w workload) {
	v.Lint = append(decision.LintWorkloadAnnotations(w.Kind, w.Annotations), decision.LintAnnotations(w.Pod.Annotations)...)
	for _, f := range v.Lint {
		if f.Severity == decision.SeverityError {
			v.Failed = true
		}
	}
}

// lintError is the first error among v's annotation findings, "" when none.
func (v workloadView) lintError(annotation string) string {
	for _, f := range v.Lint {
		if f.Severity == decision.SeverityError && (annotation == "" || f.Annotation == annotation) {
			return f.Message
		}
	}
	return ""
}

// printLint lists the annotation findings of every workload below check's table.
func printLint(w io.Writer, views []workloadView) error {
	if !slices.ContainsFunc(views, func(v workloadView) bool { return len(v.Lint) > 0 }) {
		return nil
	}
	writeLine(w, "")
	tw := newTable(w)
	fmt.Fprintln(tw, "WORKLOAD\tANNOTATIONS\tFINDING")
	for _, v := range views {
		for _, f := range v.Lint {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", workloadName(v), f.Severity, f.Message)
		}
	}
	return tw.Flush()
}

func checkResult(v workloadView) string {
	var errs []string
	for _, img := range v.unresolved() {
		errs = append(errs, img.Image)
	}
	// A DaemonSet pod under daemonSetPolicy Skip is not filtered: where its
	// images do not run, its pods fail.
	unfiltered := ""
	if v.Decision.Skipped != "" {
		unfiltered = " (not filtered: " + v.Decision.Skipped + ")"
	}
	warnings := 0
	for _, f := range v.Lint {
		if f.Severity == decision.SeverityWarning {
			warnings++
		}
	}
	switch {
	case len(errs) > 0:
		return "FAIL: cannot resolve " + strings.Join(errs, ", ") + unfiltered
	case v.rejection == decision.RejectInvalidAnnotation:
		// A syntax error is said as one, with its fix, not as "no common platform".
		return "FAIL: " + cmp.Or(v.lintError(annotations.Platforms), v.Blocking)
	case v.Blocking != "" && v.rejection != "":
		return "FAIL: " + v.Blocking + unfiltered
	case v.Blocking != "":
		return "FAIL: no common platform: " + v.Blocking + unfiltered
	case len(v.Unsupported) > 0:
		return "FAIL: cannot run on " + strings.Join(v.Unsupported, ",") + unfiltered
	case v.Nowhere != "":
		return "FAIL: " + v.Nowhere + unfiltered
	case v.lintError("") != "":
		return "FAIL: " + v.lintError("")
	case v.Decision.Skipped != "":
		return "ok: not constrained by archfilter: " + v.Decision.Skipped + warningsBelow(warnings)
	}
	return "ok" + warningsBelow(warnings)
}

// warningsBelow points at the annotation warnings printed below the table.
func warningsBelow(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return " (1 annotation warning below)"
	}
	return fmt.Sprintf(" (%d annotation warnings below)", n)
}

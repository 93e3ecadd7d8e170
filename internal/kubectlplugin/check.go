package kubectlplugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

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
	Unsupported []string        `json:"unsupported,omitempty"`
	Images      []workloadImage `json:"images"`
	Affinity    *v1.Affinity    `json:"affinity,omitempty"`
	Failed      bool            `json:"failed"`

	allowed platform.Set
	judged  judgement
}

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
		Short: "Check that every workload's images share a platform (no cluster needed)",
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
--platforms, a platform's config contradicts its index entry, or --deep finds a binary
that contradicts its manifest or an entrypoint missing from the image; 0 otherwise.`,
		Example: `  helm template ./chart | kubectl archfilter check -f - --platforms linux/amd64,linux/arm64
  kubectl archfilter check -f manifests/ --emit-affinity`,
		Args: cobra.NoArgs,
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

// loadSettings reads --args; without it, the configuration of the cluster
// of the kubeconfig when one answers within a few seconds, else the defaults
// (check runs in CI, without a cluster).
func (o *checkOptions) loadSettings(ctx context.Context, kube *genericclioptions.ConfigFlags) (*decision.Settings, *config.ArchFilterArgs, error) {
	if o.dec.argsFile != "" {
		return o.dec.load()
	}
	client, _, err := clusterClient(kube)
	if err != nil {
		s, args, lerr := o.dec.load()
		o.dec.source = "the plugin's defaults (no cluster to read archfilter's configuration from; --args names one)"
		return s, args, lerr
	}
	cctx, cancel := context.WithTimeout(ctx, clusterConfigTimeout)
	defer cancel()
	return o.dec.loadFromCluster(cctx, client)
}

// clusterConfigTimeout bounds check's look for the cluster's configuration.
const clusterConfigTimeout = 5 * time.Second

func (o *checkOptions) run(ctx context.Context, kube *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) error {
	if err := checkOutput(o.output, outputTable, outputJSON, outputYAML); err != nil {
		return err
	}
	var required []platform.Platform
	if o.platforms != "" {
		set, err := platform.ParseList(o.platforms)
		if err != nil || set.IsAny() {
			return &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("--platforms: %v", err)}
		}
		required = set.Platforms()
	}
	if err := o.deep.parse(); err != nil {
		return err
	}
	settings, args, err := o.loadSettings(ctx, kube)
	if err != nil {
		return err
	}
	o.reg.args = args
	dc := &decider{settings: settings, config: o.dec.source}
	if settings.NamespaceSelector != nil {
		client, _, err := clusterClient(kube)
		if err != nil {
			return &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("%s has a namespaceSelector, which needs the namespaces' labels from the cluster: %v", o.dec.source, err)}
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
		switch {
		case len(views[i].unresolved()) > 0:
			unresolved++
		case views[i].Failed:
			failed++
		}
	}
	found := checkFindings(ctx, s, workloads, views, o.configs, o.deep)
	if err := printWorkloads(streams, outputFormat(o.output), views, o.emitAffinity, found); err != nil {
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
			if v.Blocking == "" {
				v.Blocking = r.Message
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

func printWorkloads(streams genericiooptions.IOStreams, format outputFormat, views []workloadView, emitAffinity bool, found findings) error {
	if format != outputTable {
		doc := map[string]any{"workloads": views}
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
	switch {
	case len(errs) > 0:
		return "FAIL: cannot resolve " + strings.Join(errs, ", ") + unfiltered
	case v.Blocking != "":
		return "FAIL: no common platform: " + v.Blocking + unfiltered
	case len(v.Unsupported) > 0:
		return "FAIL: cannot run on " + strings.Join(v.Unsupported, ",") + unfiltered
	case v.Decision.Skipped != "":
		return "ok: not constrained by archfilter: " + v.Decision.Skipped
	}
	return "ok"
}

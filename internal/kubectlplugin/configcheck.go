package kubectlplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/archfilter/archfilter/pkg/misplaced"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// Results of a config check (configCheck.Result), documented in docs/kubectl-plugin.md.
const (
	// configOK: the config names the os, architecture and variant the index entry claims.
	configOK = "ok"
	// configMismatch: the config names another os, architecture or variant. containerd
	// 2.2 does not unpack such an entry on the platform the index claims, and the pod
	// fails later without saying why.
	configMismatch = "mismatch"
	// configNotImage: the entry's config is not an image config (a wasm module or an
	// artifact listed with a platform): there is no platform in it to compare.
	configNotImage = "notImage"
	// configNotChecked: the entry's manifest or config could not be read (over the size
	// limit, refused by the registry, malformed): the answer is unknown.
	configNotChecked = "notChecked"
)

// maxConfigChecks bounds the index entries of one image whose config is read, two
// requests each; the others are named as not checked. Multi-platform images list a
// dozen platforms at most.
const maxConfigChecks = 32

// configFlags is --check-config, for inspect and check.
type configFlags struct {
	enabled bool
}

func (c *configFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&c.enabled, "check-config", true, fmt.Sprintf("read the config of each platform an index lists (its manifest and config: two requests per platform, at most %d platforms per image) and check that it names the os/architecture/variant the index claims; false reads the index only", maxConfigChecks))
}

// configCheck is what the config of one index entry says, against the entry.
type configCheck struct {
	// Workload and Container are set by check: "Deployment/shop/web", "app".
	Workload  string `json:"workload,omitempty"`
	Container string `json:"container,omitempty"`
	Image     string `json:"image"`
	// Platform is what the index entry claims; Digest is the entry's manifest.
	Platform string `json:"platform"`
	Digest   string `json:"digest"`
	// Config is the entry's config blob and ConfigPlatform the os/architecture[/variant]
	// it names ("" when it names no architecture).
	Config         string `json:"config,omitempty"`
	ConfigPlatform string `json:"configPlatform,omitempty"`
	// Result is one of ok, mismatch, notImage, notChecked.
	Result  string `json:"result"`
	Message string `json:"message"`

	claimed platform.Platform
}

// failed: the index claims a platform its config contradicts.
func (c configCheck) failed() bool { return c.Result == configMismatch }

// shown: a table prints the checks that fail or could not be answered; -o json|yaml
// carries every check.
func (c configCheck) shown() bool {
	return c.Result == configMismatch || c.Result == configNotChecked
}

func (c *configCheck) notChecked(format string, args ...any) {
	c.Result, c.Message = configNotChecked, c.Platform+": not checked: "+fmt.Sprintf(format, args...)
}

// checkConfigs reads the config of each entry of d (req's description) whose platform an
// index claims, and compares them. An image without an index (its platform is its
// config's) or whose entries name no platform (their configs were read for it) has none
// to check. Each platform is read within s.timeout, through the endpoint and credentials
// that read req, and its config is bounded as every manifest and config is
// (resolver.Options.MaxManifestBytes).
func checkConfigs(ctx context.Context, s *session, req resolver.Request, d resolver.Description) []configCheck {
	var entries []resolver.Manifest
	for _, m := range d.Manifests {
		if m.Kind == resolver.ManifestImage && m.FromIndex {
			entries = append(entries, m)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	octx, cancel := context.WithTimeout(ctx, s.timeout)
	repo, openErr := s.resolver.OpenRepository(octx, req)
	cancel()
	out := make([]configCheck, 0, len(entries))
	for i, m := range entries {
		c := configCheck{Image: req.Image, Platform: m.Platform.String(), Digest: m.Digest, claimed: m.Platform}
		switch {
		case openErr != nil:
			c.notChecked("%s", readError(openErr))
		case i >= maxConfigChecks:
			c.notChecked("the index lists %d platforms, and the configs of the first %d only are read", len(entries), maxConfigChecks)
		default:
			pctx, cancel := context.WithTimeout(ctx, s.timeout)
			compareConfig(pctx, repo, &c)
			cancel()
		}
		out = append(out, c)
	}
	return out
}

// entryManifest is what compareConfig reads of an entry's manifest.
type entryManifest struct {
	Config *struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
	} `json:"config"`
}

// imageConfig is the platform an image config names.
type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant"`
}

// compareConfig reads c's manifest and config and sets its result.
func compareConfig(ctx context.Context, repo *resolver.Repository, c *configCheck) {
	raw, err := repo.Manifest(ctx, c.Digest)
	if err != nil {
		c.notChecked("manifest %s: %s", shortDigest(c.Digest), readError(err))
		return
	}
	var mf entryManifest
	if err := json.Unmarshal(raw.Body, &mf); err != nil {
		c.notChecked("manifest %s: %v", shortDigest(c.Digest), err)
		return
	}
	if mf.Config == nil || mf.Config.Digest == "" {
		c.notChecked("manifest %s (%s) has no config", shortDigest(c.Digest), raw.MediaType)
		return
	}
	c.Config = mf.Config.Digest
	switch types.MediaType(mf.Config.MediaType) {
	case "", types.OCIConfigJSON, types.DockerConfigJSON:
	default:
		c.Result = configNotImage
		c.Message = fmt.Sprintf("%s: config %s is %s, not an image config: nothing to compare", c.Platform, shortDigest(c.Config), mf.Config.MediaType)
		return
	}
	body, err := repo.Config(ctx, c.Config)
	if err != nil {
		c.notChecked("config %s: %s", shortDigest(c.Config), readError(err))
		return
	}
	var cfg imageConfig
	if err := json.Unmarshal(body, &cfg); err != nil {
		c.notChecked("config %s: %v", shortDigest(c.Config), err)
		return
	}
	said, agrees := configAgrees(c.claimed, cfg)
	c.ConfigPlatform = said
	switch {
	case agrees:
		c.Result, c.Message = configOK, fmt.Sprintf("the index and its config (%s) say %s", shortDigest(c.Config), c.Platform)
	case said == "":
		c.Result, c.Message = configMismatch, fmt.Sprintf("the index claims %s but its config (%s) names no architecture", c.Platform, shortDigest(c.Config))
	default:
		c.Result, c.Message = configMismatch, fmt.Sprintf("the index claims %s but its config (%s) says %s", c.Platform, shortDigest(c.Config), said)
	}
}

// configAgrees compares the platform a config names with the one its index entry
// claims (normalised by the resolver), both normalised alike. A config that names no
// OS is linux, as the resolver reads a single image's; one that names no variant does
// not contradict the entry's, since many builders leave it out of the config; a named
// variant must be the entry's (arm/v6 is not arm/v7). said is what the config names,
// "" when it names no architecture.
func configAgrees(claimed platform.Platform, cfg imageConfig) (said string, agrees bool) {
	if cfg.Architecture == "" {
		return "", false
	}
	if cfg.OS == "" {
		cfg.OS = "linux"
	}
	p := platform.Normalize(platform.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant})
	if cfg.Variant == "" {
		p.Variant = ""
		said = p.String()
		p.Variant = claimed.Variant
	} else {
		said = p.String()
	}
	return said, p.OS == claimed.OS && p.Architecture == claimed.Architecture && p.Variant == claimed.Variant
}

// readError is a registry failure in short (the reason, the status, the credentials
// refused), then its cause.
func readError(err error) string {
	var re *resolver.Error
	if !errors.As(err, &re) || re.Err == nil {
		return err.Error()
	}
	return shortError(err) + ": " + strings.TrimPrefix(re.Err.Error(), "invalid manifest: ")
}

// configStatus is the status of inspect's and check's config checks: the checks that fail (exit
// status 1) and those left unanswered (2).
func configStatus(checks []configCheck) (failed, unanswered int) {
	for _, c := range checks {
		switch {
		case c.failed():
			failed++
		case c.Result == configNotChecked:
			unanswered++
		}
	}
	return failed, unanswered
}

// printConfigs prints the config checks that fail or could not be answered, after a
// blank line; nothing when every config agrees.
func printConfigs(w io.Writer, checks []configCheck, withWorkload bool) error {
	var shown []configCheck
	for _, c := range checks {
		if c.shown() {
			shown = append(shown, c)
		}
	}
	if len(shown) == 0 {
		return nil
	}
	writeLine(w, "")
	tw := newTable(w)
	if withWorkload {
		fmt.Fprintln(tw, "WORKLOAD\tCONTAINER\tIMAGE\tCONFIG CHECK\tFINDING")
	} else {
		fmt.Fprintln(tw, "IMAGE\tCONFIG CHECK\tFINDING")
	}
	for _, c := range shown {
		if withWorkload {
			fmt.Fprintf(tw, "%s\t%s\t", c.Workload, c.Container)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Image, c.Result, c.Message)
	}
	return tw.Flush()
}

// configCheckWorkloads checks the configs of the images check resolved, once per image,
// and reports them per workload and container.
func configCheckWorkloads(ctx context.Context, s *session, workloads []workload, views []workloadView) []configCheck {
	type use struct {
		workload, container string
		key                 int
	}
	var (
		images []string
		uses   []use
	)
	index := map[string]int{}
	for i, w := range workloads {
		resolved := map[string]bool{}
		for _, img := range views[i].Images {
			if img.Error == "" && img.NotRead == "" {
				resolved[img.Image] = true
			}
		}
		podplatform.ForEachImage(w.Pod, func(img podplatform.Image) bool {
			if !resolved[img.Reference] {
				return true
			}
			k, ok := index[img.Reference]
			if !ok {
				k = len(images)
				index[img.Reference] = k
				images = append(images, img.Reference)
			}
			uses = append(uses, use{workload: workloadName(views[i]), container: img.Name, key: k})
			return true
		})
	}
	results := concurrently(images, func(image string) []configCheck {
		req := resolver.Request{Image: image, Credentials: s.credentials}
		d, err := s.resolver.Describe(ctx, req)
		if err != nil {
			// It resolved a moment ago: name the platforms as not checked.
			c := configCheck{Image: image}
			c.Result, c.Message = configNotChecked, "not checked: "+readError(err)
			return []configCheck{c}
		}
		return checkConfigs(ctx, s, req, d)
	})
	out := []configCheck{}
	for _, u := range uses {
		for _, c := range results[u.key] {
			c.Workload, c.Container = u.workload, u.container
			out = append(out, c)
		}
	}
	return out
}

// maxWitnessImages bounds the images report --running reads configs of.
const maxWitnessImages = 16

// configWitness gives report --running its evidence that an image's index lies about
// a platform: for a container that failed with exec format error, the index entry of
// its node's platform whose config names another. Each image is read once per pod
// credentials (namespace, service account, pull secrets), at most maxWitnessImages in
// all; the store and session are made on first use, so a run without such a finding
// reads nothing.
type configWitness struct {
	reg    *registryFlags
	client kubernetes.Interface

	ready   bool
	initErr error
	s       *session
	creds   func(*v1.Pod) resolver.Credentials
	seen    map[string]witnessed
}

type witnessed struct {
	checks []configCheck
	err    error
}

func newConfigWitness(reg *registryFlags, client kubernetes.Interface) *configWitness {
	return &configWitness{reg: reg, client: client, seen: map[string]witnessed{}}
}

func (w *configWitness) init(ctx context.Context) error {
	if w.ready {
		return w.initErr
	}
	w.ready = true
	store, err := w.reg.newStore(ctx, w.client)
	if err != nil {
		w.initErr = err
		return err
	}
	s, err := w.reg.newSessionWith(nil, nil)
	if err != nil {
		w.initErr = err
		return err
	}
	w.s = s
	w.creds = func(pod *v1.Pod) resolver.Credentials { return store.ForPod(pod) }
	return nil
}

// about is evidence for finding f of pod on node: what the configs of its image say
// (the image the container runs, when its status names it), for an exec format error;
// "" for any other finding.
func (w *configWitness) about(ctx context.Context, pod *v1.Pod, f misplaced.Finding, node *v1.Node) string {
	if f.Kind != misplaced.ExecFormatError {
		return ""
	}
	image := f.Image
	if f.Running != "" {
		image = f.Running
	}
	return w.evidence(ctx, pod, image, node)
}

// evidence is what the configs of image say about a container of pod that failed with
// exec format error on node, as "; "-prefixed text to append to the finding's
// evidence: the entries of the node's platform (all of them when the node is unknown)
// whose config contradicts the index, or why the configs could not be read; "" when
// they agree, or the image has no index to contradict.
func (w *configWitness) evidence(ctx context.Context, pod *v1.Pod, image string, node *v1.Node) string {
	if image == "" {
		return ""
	}
	key := strings.Join([]string{pod.Namespace, pod.Spec.ServiceAccountName, fmt.Sprint(pod.Spec.ImagePullSecrets), image}, "\x00")
	got, ok := w.seen[key]
	if !ok {
		switch {
		case len(w.seen) >= maxWitnessImages:
			return fmt.Sprintf("; its config was not checked: the configs of %d images are read at most", maxWitnessImages)
		case w.init(ctx) != nil:
			return "; its config was not checked: " + w.initErr.Error()
		}
		req := resolver.Request{Image: image, Credentials: w.creds(pod)}
		dctx, cancel := context.WithTimeout(ctx, w.s.timeout)
		d, err := w.s.resolver.Describe(dctx, req)
		cancel()
		got = witnessed{err: err}
		if err == nil {
			got.checks = checkConfigs(ctx, w.s, req, d)
		}
		w.seen[key] = got
	}
	if got.err != nil {
		return "; its config was not checked: " + readError(got.err)
	}
	np, known := platform.FromNode(node)
	var said []string
	for _, c := range got.checks {
		if known && !c.claimed.Matches(np) {
			continue
		}
		switch c.Result {
		case configMismatch:
			said = append(said, c.Message)
		case configNotChecked:
			said = append(said, "config check of "+c.Message)
		}
	}
	if len(said) == 0 {
		return ""
	}
	return "; " + strings.Join(said, "; ")
}

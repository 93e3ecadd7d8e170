package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	testutils "k8s.io/kubernetes/test/integration/util"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/apis/annotations"
	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/internal/placement/app"
	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/placement"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// holdGate keeps the agreement test's pods from being scheduled: the test asks
// each front-end what it would allow, and binds nothing.
const holdGate = "agreement.archfilter.io/hold"

// Namespaces of the agreement test: selected by the namespaceSelector, not
// selected, and selected but excluded.
const (
	nsSelected   = "agree-selected"
	nsUnselected = "agree-unselected"
	nsExcluded   = "agree-excluded"
)

// agreementCase is one pod, judged by every front-end.
type agreementCase struct {
	name string
	// images are the containers' images, in order (names of agreementImages).
	images []string
	// namespace defaults to nsSelected.
	namespace   string
	labels      map[string]string
	annotations map[string]string
	// mutate adds the pod's own constraints, owner, and the like.
	mutate func(*v1.Pod)
	// want are the nodes the pod may be placed on, whoever decides.
	want []string
	// outcome is archfilter's decision (decision.Outcome*).
	outcome string
}

// agreementConfig is one set of ArchFilterArgs and the cases judged under it.
type agreementConfig struct {
	name  string
	args  string
	cases []agreementCase
	// policies are created before the cases are judged.
	policies []*policyv1alpha1.ArchFilterPolicy
}

// The nodes, one per platform (their names are their platforms).
var agreementNodes = []struct{ name, os, arch, build string }{
	{"amd64", "linux", "amd64", ""},
	{"arm64", "linux", "arm64", ""},
	{"s390x", "linux", "s390x", ""},
	{"windows-1809", "windows", "amd64", "10.0.17763"},
	{"windows-2022", "windows", "amd64", "10.0.20348"},
}

var allAgreementNodes = []string{"amd64", "arm64", "s390x", "windows-1809", "windows-2022"}

func nodeSelector(key, value string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{key: value} }
}

// agreementConfigs are the table: every annotation (valid and invalid), DaemonSet
// pods under each policy, namespaces in and out of the selector and the excluded
// list, localhost/ images with and without declared platforms, Windows builds, the
// 32-bit rule, pods whose own constraints conflict, images that do not resolve.
func agreementConfigs() []agreementConfig {
	const common = "maxWait: 3s\nrun32BitImagesOn: [arm64]\npreferredPlatforms:\n- platform: linux/arm64\n  weight: 10\n" +
		"namespaceSelector:\n  matchLabels:\n    archfilter: \"on\"\n" +
		"excludedNamespaces: [kube-system, kube-public, kube-node-lease, " + nsExcluded + "]\n"
	return []agreementConfig{
		{
			name: "Ignore and DaemonSets skipped",
			args: common + "failurePolicy: Ignore\ndaemonSetPolicy: Skip\n",
			cases: []agreementCase{
				{name: "multi-arch", images: []string{"multi"}, want: []string{"amd64", "arm64"}, outcome: decision.OutcomeConstrained},
				{name: "amd64-only", images: []string{"amd64"}, want: []string{"amd64"}, outcome: decision.OutcomeConstrained},
				{name: "windows-1809-only", images: []string{"windows1809"}, want: []string{"windows-1809"}, outcome: decision.OutcomeConstrained},
				// Microsoft's rule: from 20348 on, a host runs images of its build and older ones from 20348 on.
				{name: "windows-2022-only", images: []string{"windows2022"}, want: []string{"windows-2022"}, outcome: decision.OutcomeConstrained},
				{name: "images intersect", images: []string{"multi", "arm64"}, want: []string{"arm64"}, outcome: decision.OutcomeConstrained},
				{name: "32-bit rule", images: []string{"armv7"}, want: []string{"arm64"}, outcome: decision.OutcomeConstrained},
				{
					name: "declared platforms replace the registry's", images: []string{"amd64"},
					annotations: map[string]string{annotations.Platforms: "linux/s390x"}, want: []string{"s390x"}, outcome: decision.OutcomeConstrained,
				},
				{
					name: "declared platforms for a localhost image", images: []string{"localhost"},
					annotations: map[string]string{annotations.Platforms: "linux/amd64,linux/arm64"}, want: []string{"amd64", "arm64"}, outcome: decision.OutcomeConstrained,
				},
				{
					name: "invalid declared platforms", images: []string{"multi"},
					annotations: map[string]string{annotations.Platforms: "linux/"}, outcome: decision.OutcomeRejected,
				},
				{name: "no common platform", images: []string{"amd64", "arm64"}, outcome: decision.OutcomeRejected},
				{name: "own nodeSelector conflicts", images: []string{"arm64"}, mutate: nodeSelector(v1.LabelArchStable, "amd64"), outcome: decision.OutcomeRejected},
				{name: "own nodeSelector narrows", images: []string{"multi"}, mutate: nodeSelector(v1.LabelArchStable, "arm64"), want: []string{"arm64"}, outcome: decision.OutcomeConstrained},
				{name: "own spec.os narrows", images: []string{"multiWindows"}, mutate: func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }, want: []string{"windows-1809"}, outcome: decision.OutcomeConstrained},
				{
					name: "skip annotation", images: []string{"arm64"},
					annotations: map[string]string{annotations.Skip: "true"}, want: allAgreementNodes, outcome: decision.OutcomeSkipped,
				},
				{
					name: "invalid skip annotation does not skip", images: []string{"arm64"},
					annotations: map[string]string{annotations.Skip: "yes"}, want: []string{"arm64"}, outcome: decision.OutcomeConstrained,
				},
				{
					name: "valid preferred-platforms", images: []string{"multi"},
					annotations: map[string]string{annotations.PreferredPlatforms: "linux/amd64=50"}, want: []string{"amd64", "arm64"}, outcome: decision.OutcomeConstrained,
				},
				{
					name: "invalid preferred-platforms is ignored", images: []string{"multi"},
					annotations: map[string]string{annotations.PreferredPlatforms: "linux/amd64=500"}, want: []string{"amd64", "arm64"}, outcome: decision.OutcomeConstrained,
				},
				{name: "namespace not selected", namespace: nsUnselected, images: []string{"arm64"}, want: allAgreementNodes, outcome: decision.OutcomeSkipped},
				{name: "namespace excluded", namespace: nsExcluded, images: []string{"arm64"}, want: allAgreementNodes, outcome: decision.OutcomeSkipped},
				// Pinned by its controller: not filtered (daemonSetPolicy Skip), though its image does not run there.
				{name: "DaemonSet pod under Skip", images: []string{"arm64"}, mutate: daemonSetPod("amd64"), want: []string{"amd64"}, outcome: decision.OutcomeSkipped},
				{name: "localhost image without declared platforms fails open", images: []string{"localhost"}, want: allAgreementNodes, outcome: decision.OutcomeFailedOpen},
				{name: "missing image fails open", images: []string{"missing"}, want: allAgreementNodes, outcome: decision.OutcomeFailedOpen},
			},
		},
		{
			name: "Fail and DaemonSets enforced",
			args: common + "failurePolicy: Fail\ndaemonSetPolicy: Enforce\n",
			cases: []agreementCase{
				{name: "multi-arch", images: []string{"multi"}, want: []string{"amd64", "arm64"}, outcome: decision.OutcomeConstrained},
				{name: "missing image is not placed", images: []string{"missing"}, outcome: decision.OutcomeRejected},
				{name: "DaemonSet pod on a node its image runs on", images: []string{"arm64"}, mutate: daemonSetPod("arm64"), want: []string{"arm64"}, outcome: decision.OutcomeConstrained},
				{name: "DaemonSet pod on a node its image does not run on", images: []string{"arm64"}, mutate: daemonSetPod("amd64"), outcome: decision.OutcomeConstrained},
			},
		},
		teamPolicies(common),
		{
			name: "Ignore with fallbackPlatforms",
			args: common + "failurePolicy: Ignore\nfallbackPlatforms: [linux/amd64]\n",
			cases: []agreementCase{
				{name: "missing image falls back", images: []string{"missing"}, want: []string{"amd64"}, outcome: decision.OutcomeFailedOpen},
				{name: "resolved and missing: their intersection", images: []string{"multi", "missing"}, want: []string{"amd64"}, outcome: decision.OutcomeFailedOpen},
				{name: "resolved image outside the fallback", images: []string{"arm64", "missing"}, outcome: decision.OutcomeRejected},
			},
		},
	}
}

// TestOneDecisionEverywhere feeds one table of pods to the three front-ends on a real
// apiserver and fails on any divergence: the nodes the scheduler's ArchFilter profile
// finds feasible; the nodes the stock profile finds feasible for the pod the placement
// mode's webhook and controller wrote (or none while it keeps the pod gated); and what
// kubectl archfilter why and check print (the nodes archfilter allows, within the pod's
// own constraints, and the decision's outcome). The placement mode's recorded decision
// must match why's.
func TestOneDecisionEverywhere(t *testing.T) {
	reg := registrytest.NewMemory(t)
	f := reg.Fixtures(t)
	images := map[string]string{
		"multi":        f.Index("agree/multi:v1", registrytest.OCI, "linux/amd64", "linux/arm64").Ref,
		"amd64":        f.Image("agree/amd64:v1", registrytest.Docker, "linux/amd64").Ref,
		"arm64":        f.Image("agree/arm64:v1", registrytest.OCI, "linux/arm64").Ref,
		"armv7":        f.Image("agree/armv7:v1", registrytest.OCI, "linux/arm/v7").Ref,
		"windows1809":  f.Index("agree/win1809:v1", registrytest.Docker, "windows/amd64:10.0.17763.6054").Ref,
		"windows2022":  f.Index("agree/win2022:v1", registrytest.Docker, "windows/amd64:10.0.20348.2461").Ref,
		"multiWindows": f.Index("agree/multiwin:v1", registrytest.OCI, "linux/amd64", "windows/amd64:10.0.17763.6054").Ref,
		"missing":      reg.Host() + "/agree/no-such-repo:v1",
		"localhost":    "localhost/agree/tools:v1",
	}
	for _, cfg := range agreementConfigs() {
		t.Run(cfg.name, func(t *testing.T) {
			a := startAgreement(t, cfg.args, reg.Host())
			a.createPolicies(t, cfg.policies)
			for _, tc := range cfg.cases {
				t.Run(tc.name, func(t *testing.T) {
					a.check(t, tc, images)
				})
			}
		})
	}
}

// agreement is an apiserver with the nodes and namespaces of the table, the
// scheduler's two profiles (not running: asked, never binding) and the placement
// mode running in-process with the same ArchFilterArgs.
type agreement struct {
	*placementCluster
	sched    *scheduler.Scheduler
	argsFile string
	// policies are the config's, written into check's manifests.
	policies   []*policyv1alpha1.ArchFilterPolicy
	registry   string
	kubectl    *kubectl
	nodes      []*v1.Node
	dockerConf string
}

const stockProfile = "stock"

func startAgreement(t *testing.T, args, registry string) *agreement {
	t.Helper()
	args += "registries:\n- host: " + registry + "\n  insecure: true\n"
	// An API server that serves the ArchFilterPolicy CRD: the scheduler
	// registers the policies' event, and waits for its informer.
	testCtx := startAPIServerWithCRDs(t)
	cs := testCtx.ClientSet
	for name, on := range map[string]bool{nsSelected: true, nsUnselected: false, nsExcluded: true} {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if on {
			ns.Labels = map[string]string{"archfilter": "on"}
		}
		if _, err := cs.CoreV1().Namespaces().Create(testCtx.Ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c := &cluster{t: t, ctx: testCtx.Ctx, cs: cs, ns: nsSelected, config: testCtx.KubeConfig}
	a := &agreement{registry: registry, dockerConf: t.TempDir()}
	for _, n := range agreementNodes {
		a.nodes = append(a.nodes, c.node(n.name, n.os, n.arch, n.build))
	}

	// The scheduler's profiles: the deployed one with ArchFilter, and the stock
	// one, which places the pods the placement mode wrote.
	cfgYAML := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: %s
  plugins:
    multiPoint:
      enabled:
      - name: ArchFilter
  pluginConfig:
  - name: ArchFilter
    args:
%s
- schedulerName: %s
`, schedulerName, indent(args, "      "), stockProfile)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfgYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	logger, _ := ktesting.NewTestContext(t)
	cfg, err := options.LoadConfigFromFile(logger, path)
	if err != nil {
		t.Fatalf("config:\n%s\n%v", cfgYAML, err)
	}
	testCtx = testutils.InitTestSchedulerWithOptions(t, testCtx, 0,
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithFrameworkOutOfTreeRegistry(frameworkruntime.Registry{archfilter.Name: archfilter.New}))
	testutils.SyncSchedulerInformerFactory(testCtx)
	t.Cleanup(testCtx.SchedulerCloseFn)
	a.sched = testCtx.Scheduler

	a.argsFile = filepath.Join(t.TempDir(), "args.yaml")
	if err := os.WriteFile(a.argsFile, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: ArchFilterArgs\n"+args), 0o600); err != nil {
		t.Fatal(err)
	}
	o := app.NewOptions()
	o.RestConfig = rest.CopyConfig(testCtx.KubeConfig)
	o.RestConfig.Impersonate = rest.ImpersonationConfig{UserName: applyPlacementRBAC(t, cs)}
	o.ArgsFile = a.argsFile
	o.WebhookURL = "https://" + freeLoopbackAddr(t)
	o.Namespace = metav1.NamespaceSystem
	o.LeaderElect = true
	o.MaxGated = time.Minute
	a.placementCluster = &placementCluster{cluster: c, opts: o}
	a.start()
	t.Cleanup(a.shutdown)
	a.kubectl = &kubectl{kubeconfig: writeKubeconfig(t, testCtx.KubeConfig)}
	return a
}

// podFor builds tc's pod in its namespace for schedulerName, held by holdGate.
func (a *agreement) podFor(tc agreementCase, images map[string]string, name, schedulerName string) *v1.Pod {
	ns := tc.namespace
	if ns == "" {
		ns = nsSelected
	}
	p := st.MakePod().Namespace(ns).Name(name).SchedulerName(schedulerName).Obj()
	p.Annotations = tc.annotations
	p.Labels = tc.labels
	for i, img := range tc.images {
		ref, ok := images[img]
		if !ok {
			a.t.Fatalf("no image %q", img)
		}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Image: ref})
	}
	if tc.mutate != nil {
		tc.mutate(p)
	}
	p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: holdGate}}
	return p
}

func (a *agreement) check(t *testing.T, tc agreementCase, images map[string]string) {
	ctx := a.ctx
	// The pods' names: the case's, in the letters a name may have.
	base := strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			return r
		case 'A' <= r && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, tc.name), "-")
	base = base[:min(len(base), 50)]
	want := sets.New(tc.want...)

	// The scheduler: the pod as its ArchFilter profile would find it.
	pluginPod := a.podFor(tc, images, base+"-s", schedulerName)
	created, err := a.cs.CoreV1().Pods(pluginPod.Namespace).Create(ctx, pluginPod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if placement.HasGate(created) {
		t.Errorf("the webhook gated a pod of %s, whose ArchFilter decides for it", schedulerName)
	}
	pluginNodes := a.feasible(t, schedulerName, created)

	// The placement mode: the pod its webhook and controller wrote, as the stock profile finds it.
	placedPod := a.podFor(tc, images, base+"-p", v1.DefaultSchedulerName)
	if _, err := a.cs.CoreV1().Pods(placedPod.Namespace).Create(ctx, placedPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	placed := a.afterPlacement(t, placedPod)
	placementNodes := sets.New[string]()
	if !placement.HasGate(placed) {
		placementNodes = a.feasible(t, stockProfile, placed)
	}

	// kubectl archfilter why, on each pod, and check on the pod's manifest.
	whyPlaced := a.why(t, placed)
	whyPlugin := a.why(t, created)
	checked := a.checkManifest(t, placedPod)

	for _, got := range []struct {
		who   string
		nodes sets.Set[string]
	}{
		{"the scheduler's ArchFilter profile", pluginNodes},
		{"the placement mode with the stock profile", placementNodes},
		{"kubectl archfilter why (placement pod)", a.whyNodes(whyPlaced, placedPod)},
		{"kubectl archfilter why (scheduler pod)", a.whyNodes(whyPlugin, pluginPod)},
	} {
		if !got.nodes.Equal(want) {
			t.Errorf("%s allows %v, want %v", got.who, sets.List(got.nodes), sets.List(want))
		}
	}
	for _, got := range []struct{ who, outcome string }{
		{"why (placement pod)", whyPlaced.Decision.Outcome},
		{"why (scheduler pod)", whyPlugin.Decision.Outcome},
		{"check", checked.Decision.Outcome},
	} {
		if got.outcome != tc.outcome {
			t.Errorf("%s: outcome %q, want %q", got.who, got.outcome, tc.outcome)
		}
	}
	// The placement mode decides for the stock profile's pods in the namespaces its
	// webhook selects; in the others no front-end of archfilter does, and why says so.
	wantPlaced := decision.ViaPlacement.String()
	if skipped := decision.SkipReason(whyPlaced.Decision.Skipped); skipped == decision.SkipExcludedNamespace || skipped == decision.SkipNamespaceNotSelected {
		wantPlaced = "none"
	}
	if whyPlaced.Decision.By != wantPlaced || whyPlugin.Decision.By != decision.ViaScheduler.String() {
		t.Errorf("why names the front-ends %q and %q, want %q and %q", whyPlaced.Decision.By, whyPlugin.Decision.By, wantPlaced, decision.ViaScheduler)
	}
	if whyPlugin.Recorded != nil {
		t.Errorf("why finds a recorded decision on the scheduler's pod: %+v", whyPlugin.Recorded)
	}
	// What the placement mode recorded is what why re-resolves (a pod it did not gate has no record).
	if rec := whyPlaced.Recorded; rec != nil {
		if rec.Outcome != whyPlaced.Decision.Outcome || (rec.Outcome != decision.OutcomeRejected && rec.Platforms != whyPlaced.Decision.Platforms) {
			t.Errorf("recorded %+v, why re-resolves %+v", rec, whyPlaced.Decision)
		}
		if whyPlaced.Decision.Preferred != "" && !strings.HasPrefix(whyPlaced.Decision.Preferred, rec.Preferred) {
			t.Errorf("recorded preferences %q, why says %q", rec.Preferred, whyPlaced.Decision.Preferred)
		}
	} else if gated := tc.outcome != decision.OutcomeSkipped; gated && !placement.HasGate(placed) {
		t.Errorf("the placement mode released pod %s without recording its decision", placed.Name)
	}
}

// feasible returns the nodes the profile's PreFilter and Filter plugins accept for
// pod, after the profile's PreEnqueue plugins admit it (ArchFilter holds a pod while
// its images resolve, at most maxWait).
func (a *agreement) feasible(t *testing.T, profile string, pod *v1.Pod) sets.Set[string] {
	t.Helper()
	fw, ok := a.sched.Profiles[profile]
	if !ok {
		t.Fatalf("no profile %s", profile)
	}
	// The pod as the queue sees it once the test's hold gate is gone (a gated
	// pod only has its images fetched: ArchFilter admits it to the gate).
	pod = pod.DeepCopy()
	pod.Spec.SchedulingGates = nil
	admitted := func(ctx context.Context) (bool, error) {
		for _, pl := range fw.PreEnqueuePlugins() {
			if s := pl.PreEnqueue(ctx, pod); !s.IsSuccess() {
				return false, nil
			}
		}
		return true, nil
	}
	if err := wait.PollUntilContextTimeout(a.ctx, 50*time.Millisecond, 30*time.Second, true, admitted); err != nil {
		t.Fatalf("%s: PreEnqueue did not admit pod %s: %v", profile, pod.Name, err)
	}
	snapshot, ok := fw.SnapshotSharedLister().(*internalcache.Snapshot)
	if !ok {
		t.Fatalf("the profile's snapshot is a %T", fw.SnapshotSharedLister())
	}
	logger, _ := ktesting.NewTestContext(t)
	a.eventually("the scheduler's cache holds the nodes", func(context.Context) (bool, error) {
		if err := a.sched.Cache.UpdateSnapshot(logger, snapshot); err != nil {
			return false, err
		}
		infos, err := snapshot.NodeInfos().List()
		return err == nil && len(infos) == len(a.nodes), err
	})
	out := sets.New[string]()
	state := framework.NewCycleState()
	res, s, _ := fw.RunPreFilterPlugins(a.ctx, state, pod)
	if !s.IsSuccess() {
		if !s.IsRejected() {
			t.Fatalf("%s: PreFilter of %s: %v", profile, pod.Name, s)
		}
		return out
	}
	infos, err := snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	for _, ni := range infos {
		name := ni.Node().Name
		if res != nil && !res.AllNodes() && !res.NodeNames.Has(name) {
			continue
		}
		if fw.RunFilterPlugins(a.ctx, state, pod, ni).IsSuccess() {
			out.Insert(name)
		}
	}
	return out
}

// afterPlacement waits until the placement mode has decided about pod: its gate
// removed, or (failurePolicy Fail) kept past the controller's wait for the registries.
func (a *agreement) afterPlacement(t *testing.T, pod *v1.Pod) *v1.Pod {
	t.Helper()
	var got *v1.Pod
	deadline := time.Now().Add(10 * time.Second) // past maxWait (3s): the controller decided
	a.eventually("pod "+pod.Name+" placed", func(ctx context.Context) (bool, error) {
		p, err := a.cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return !placement.HasGate(p) || time.Now().After(deadline), nil
	})
	return got
}

// whyJSON is what the test reads of why -o json.
type whyJSON struct {
	Decision struct {
		By, Outcome, Platforms, Preferred, Skipped string
	}
	Recorded *decision.Record
	Nodes    []struct {
		Platform string
		Allowed  bool
	}
}

func (a *agreement) why(t *testing.T, pod *v1.Pod) whyJSON {
	t.Helper()
	// The cluster publishes no scheduler configuration (the chart's ConfigMap): why is
	// told which scheduler runs ArchFilter, as its answer to that says to.
	r := a.kubectl.run(t, a.dockerConf, "why", pod.Name, "-n", pod.Namespace, "--args", a.argsFile, "--scheduler-name", schedulerName, "-o", "json")
	var v whyJSON
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("why %s: %v\n%s", pod.Name, err, r.transcript)
	}
	return v
}

// whyNodes are the nodes of the platforms why says archfilter allows that the
// pod's own constraints (nodeSelector, node affinity, as the scheduler reads them) admit.
func (a *agreement) whyNodes(v whyJSON, pod *v1.Pod) sets.Set[string] {
	allowed := sets.New[string]()
	for _, g := range v.Nodes {
		if g.Allowed {
			allowed.Insert(g.Platform)
		}
	}
	own := nodeaffinity.GetRequiredNodeAffinity(pod)
	out := sets.New[string]()
	for _, n := range a.nodes {
		group := n.Labels[v1.LabelOSStable] + "/" + n.Labels[v1.LabelArchStable]
		if b := n.Labels[v1.LabelWindowsBuild]; b != "" {
			group += " (build " + b + ")"
		}
		if ok, _ := own.Match(n); ok && allowed.Has(group) {
			out.Insert(n.Name)
		}
	}
	return out
}

// checkJSON is what the test reads of check -o json.
type checkJSON struct {
	Workloads []struct {
		Decision struct{ Outcome string }
	}
}

// checkManifest runs check -f on pod's manifest, as a user would before applying it.
func (a *agreement) checkManifest(t *testing.T, pod *v1.Pod) struct{ Decision struct{ Outcome string } } {
	t.Helper()
	manifest := pod.DeepCopy()
	manifest.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	manifest.Spec.SchedulingGates = nil
	data, err := yaml.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	// The namespace's policies travel with the manifest: check -f applies them.
	for _, p := range a.policies {
		p = p.DeepCopy()
		p.APIVersion, p.Kind = policyv1alpha1.SchemeGroupVersion.String(), policyv1alpha1.Kind
		doc, err := yaml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		data = append(append(data, "---\n"...), doc...)
	}
	file := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := a.kubectl.run(t, a.dockerConf, "check", "-f", file, "--args", a.argsFile, "-o", "json")
	var v checkJSON
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Workloads) != 1 {
		t.Fatalf("check: %v\n%s", err, r.transcript)
	}
	if slices.Contains([]string{decision.OutcomeConstrained, decision.OutcomeSkipped, decision.OutcomeUnconstrained}, v.Workloads[0].Decision.Outcome) && r.code == 2 {
		t.Errorf("check exits 2 (not answered) for a pod archfilter decides without a registry:\n%s", r.transcript)
	}
	return v.Workloads[0]
}

// teamPolicies is the table's policies: teams in the selected namespace with
// their own allowed platforms, preferences, failure policy and opt-out, a
// policy for everyone else, and one in an excluded namespace.
func teamPolicies(common string) agreementConfig {
	team := func(name string) map[string]string { return map[string]string{"team": name} }
	fail := policyv1alpha1.FailurePolicyFail
	policy := func(ns, name string, selector map[string]string, spec policyv1alpha1.ArchFilterPolicySpec) *policyv1alpha1.ArchFilterPolicy {
		if selector != nil {
			spec.PodSelector = policyv1alpha1.MatchingLabels(selector)
		}
		return &policyv1alpha1.ArchFilterPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	}
	return agreementConfig{
		name: "Team policies",
		args: common + "failurePolicy: Ignore\ndaemonSetPolicy: Skip\n",
		policies: []*policyv1alpha1.ArchFilterPolicy{
			policy(nsSelected, "arm-team", team("arm"), policyv1alpha1.ArchFilterPolicySpec{AllowedPlatforms: []string{"linux/arm64"},
				PreferredPlatforms: []policyv1alpha1.PlatformPreference{{Platform: "linux/arm64", Weight: 100}}}),
			policy(nsSelected, "amd-team", team("amd"), policyv1alpha1.ArchFilterPolicySpec{AllowedPlatforms: []string{"linux/amd64"}}),
			policy(nsSelected, "opted-out", team("out"), policyv1alpha1.ArchFilterPolicySpec{OptOut: true}),
			policy(nsSelected, "strict", team("strict"), policyv1alpha1.ArchFilterPolicySpec{FailurePolicy: &fail}),
			policy(nsSelected, "zz-everyone", nil, policyv1alpha1.ArchFilterPolicySpec{PreferredPlatforms: []policyv1alpha1.PlatformPreference{{Platform: "linux/amd64", Weight: 30}}}),
			policy(nsExcluded, "ignored", nil, policyv1alpha1.ArchFilterPolicySpec{AllowedPlatforms: []string{"linux/s390x"}}),
		},
		cases: []agreementCase{
			{name: "allowed platforms narrow a multi-arch image", images: []string{"multi"}, labels: team("arm"), want: []string{"arm64"}, outcome: decision.OutcomeConstrained},
			{name: "images on no allowed platform", images: []string{"amd64"}, labels: team("arm"), outcome: decision.OutcomeRejected},
			{name: "another team's allowed platforms", images: []string{"multi"}, labels: team("amd"), want: []string{"amd64"}, outcome: decision.OutcomeConstrained},
			{name: "a Windows image under a Linux team", images: []string{"windows1809"}, labels: team("amd"), outcome: decision.OutcomeRejected},
			{name: "declared platforms narrowed by the policy", images: []string{"localhost"}, labels: team("arm"),
				annotations: map[string]string{annotations.Platforms: "linux/amd64,linux/arm64"}, want: []string{"arm64"}, outcome: decision.OutcomeConstrained},
			{name: "opted out by the policy", images: []string{"arm64"}, labels: team("out"), want: allAgreementNodes, outcome: decision.OutcomeSkipped},
			{name: "the pod's skip false wins over the opt-out", images: []string{"arm64"}, labels: team("out"),
				annotations: map[string]string{annotations.Skip: "false"}, want: []string{"arm64"}, outcome: decision.OutcomeConstrained},
			{name: "the policy's failurePolicy Fail", images: []string{"missing"}, labels: team("strict"), outcome: decision.OutcomeRejected},
			{name: "the cluster's failurePolicy Ignore elsewhere", images: []string{"missing"}, want: allAgreementNodes, outcome: decision.OutcomeFailedOpen},
			{name: "a policy in an excluded namespace", namespace: nsExcluded, images: []string{"arm64"}, want: allAgreementNodes, outcome: decision.OutcomeSkipped},
		},
	}
}

// createPolicies creates the config's policies and waits until archfilter has
// reported on each (its status observes its generation): the scheduler's and
// the placement mode's stores hold them then.
func (a *agreement) createPolicies(t *testing.T, policies []*policyv1alpha1.ArchFilterPolicy) {
	t.Helper()
	if len(policies) == 0 {
		return
	}
	a.policies = policies
	dyn := dynamic.NewForConfigOrDie(a.config)
	for _, p := range policies {
		if err := createPolicy(t, dyn, p); err != nil {
			t.Fatalf("creating ArchFilterPolicy %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	for _, p := range policies {
		a.eventually("the status of ArchFilterPolicy "+p.Namespace+"/"+p.Name, func(ctx context.Context) (bool, error) {
			c, got, err := policyCondition(ctx, dyn, p.Namespace, p.Name, policyv1alpha1.ConditionAccepted)
			return err == nil && c != nil && got.Status.ObservedGeneration == got.Generation, nil
		})
	}
	c, _, err := policyCondition(a.ctx, dyn, nsExcluded, "ignored", policyv1alpha1.ConditionAccepted)
	if err != nil || c.Status != metav1.ConditionFalse || c.Reason != policyv1alpha1.ReasonNamespaceExcluded {
		t.Errorf("the policy in an excluded namespace: Accepted %+v, %v; want False, %s", c, err, policyv1alpha1.ReasonNamespaceExcluded)
	}
	// Both stores' informers saw the objects before their status was written
	// (by either); a moment more for the other one's.
	time.Sleep(time.Second)
}

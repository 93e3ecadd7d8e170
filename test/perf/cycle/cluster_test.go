package cycle

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/archfilter/archfilter/apis/config"
	_ "github.com/archfilter/archfilter/apis/config/scheme" // ArchFilterArgs
	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// The profiles of the scheduler, each a KubeSchedulerConfiguration profile.
const (
	// profileDefault has the default plugins only.
	profileDefault = "default"
	// profileMinimal adds minimalArchFilter as the manifest adds ArchFilter,
	// under multiPoint and filter, which makes it the first Filter plugin.
	profileMinimal = "minimal"
	// profileMinimalAll is profileMinimal with a plugin that allows every node
	// architecture: what any Filter plugin that checks the architecture costs when
	// it rejects nothing.
	profileMinimalAll = "minimal-all"
	// profileSkipFloor adds skipFloor as the manifest adds ArchFilter: a Filter
	// plugin that is always skipped.
	profileSkipFloor = "skip-floor"
	// profileArchFilter is manifests/scheduler-config/default-scheduler.yaml's
	// profile: the default plugins plus ArchFilter under multiPoint and filter.
	profileArchFilter = "archfilter"
)

// minimalAllowed are the architectures minimalArchFilter allows: those of the
// multi-arch image, the only pods the minimal profile schedules.
var minimalAllowed = []string{"amd64", "arm64"}

// minimalAllAllowed are the architectures of every node, for profileMinimalAll.
var minimalAllAllowed = []string{"amd64", "arm64", "s390x"}

// image is a repository of the test registry and the platforms of its index.
type image struct {
	repo      string
	platforms []string
}

// The images of the pods, as test/perf's (config/templates/pod-*.yaml).
var (
	imageMultiArch  = image{"perf/multiarch:v1", []string{"linux/amd64", "linux/arm64"}}
	imageEverywhere = image{"perf/everywhere:v1", []string{"linux/amd64", "linux/arm64", "linux/s390x"}}
	imageS390x      = image{"perf/s390x:v1", []string{"linux/s390x"}}
	images          = []image{imageMultiArch, imageEverywhere, imageS390x}
)

// defaultScheduler is the deployed configuration whose profile profileArchFilter is.
var defaultScheduler = filepath.Join("..", "..", "..", "manifests", "scheduler-config", "default-scheduler.yaml")

// cluster is a kube-scheduler over a fake clientset of nodes, with the three
// profiles and ArchFilter's images resolved: what SchedulePod needs, and nothing
// that runs while it does (no scheduling loop, no apiserver, no binding).
type cluster struct {
	sched    *scheduler.Scheduler
	client   *fake.Clientset
	pods     corelisters.PodLister
	registry string
	// arch is each node's architecture, by name.
	arch map[string]string
	// archCount counts the nodes of each architecture.
	archCount map[string]int
	// podSeq numbers the pods made, so that each has a name and UID of its own.
	podSeq int
}

// layout is what a cluster holds before the measured pods come: its nodes, made
// by makeNode from their index, and pods already bound to each.
type layout struct {
	nodes    int
	makeNode func(i int) *v1.Node
	// podsPerNode pods run on each node: upstream's pod-default template (boundPod),
	// or boundPodOf's when it is set.
	podsPerNode int
	boundPodOf  func(name, node string) *v1.Pod
	// registries are more registry hosts ArchFilter's args allow (plain HTTP on
	// loopback), besides the cluster's own.
	registries []string
}

// newCluster starts the registry, the informers and the scheduler over n nodes
// of the mixed-architecture layout (makeNode) and returns once every node is in
// the scheduler's snapshot and in ArchFilter's node index, and ArchFilter has
// every image's platforms cached.
func newCluster(tb testing.TB, ctx context.Context, n int) *cluster {
	tb.Helper()
	return newClusterOf(tb, ctx, layout{nodes: n, makeNode: makeNode})
}

// newClusterOf is newCluster over the nodes and bound pods of l; it also waits
// until the scheduler's cache holds the pods.
func newClusterOf(tb testing.TB, ctx context.Context, l layout) *cluster {
	tb.Helper()
	n := l.nodes
	ctx, cancel := context.WithCancel(ctx)
	tb.Cleanup(cancel)
	reg := startRegistry(tb)
	c := &cluster{registry: reg.Host(), arch: map[string]string{}, archCount: map[string]int{}}
	objects := make([]runtime.Object, 0, n*(1+l.podsPerNode))
	for i := range n {
		node := l.makeNode(i)
		objects = append(objects, node)
		c.arch[node.Name] = node.Labels[v1.LabelArchStable]
		c.archCount[node.Labels[v1.LabelArchStable]]++
		for j := range l.podsPerNode {
			newPod := boundPod
			if l.boundPodOf != nil {
				newPod = l.boundPodOf
			}
			objects = append(objects, newPod(fmt.Sprintf("%s-pod-%d", node.Name, j), node.Name))
		}
	}
	cs := fake.NewClientset(objects...)
	// The cluster stays as built: the writes a cycle's PostFilter makes (preemption
	// deletes its victims and clears nominations, asynchronously) are accepted and
	// dropped, so that every preemption cycle sees the same victims.
	for _, verb := range []string{"delete", "patch", "update"} {
		cs.PrependReactor(verb, "pods", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	sched, err := scheduler.New(ctx, cs, factory, nil, profile.NewRecorderFactory(broadcaster),
		scheduler.WithProfiles(loadProfiles(tb, append([]string{reg.Host()}, l.registries...)...)...),
		scheduler.WithFrameworkOutOfTreeRegistry(frameworkruntime.Registry{
			archfilter.Name: archfilter.New,
			minimalName:     newMinimalArchFilter(minimalName, minimalAllowed...),
			minimalAllName:  newMinimalArchFilter(minimalAllName, minimalAllAllowed...),
			skipFloorName:   newSkipFloor,
		}))
	if err != nil {
		tb.Fatalf("scheduler.New: %v", err)
	}
	tb.Cleanup(func() {
		// The informers stop with ctx; Shutdown waits for them.
		cancel()
		factory.Shutdown()
		broadcaster.Shutdown()
	})
	c.sched = sched
	c.client = cs
	c.pods = factory.Core().V1().Pods().Lister()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			tb.Fatalf("informer of %v did not sync", typ)
		}
	}
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		tb.Fatalf("scheduler's event handlers: %v", err)
	}
	c.warmUp(tb, ctx)
	want := n * l.podsPerNode
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got, err := sched.Cache.PodCount()
		return got == want, err
	})
	if err != nil {
		got, _ := sched.Cache.PodCount()
		tb.Fatalf("the scheduler's cache holds %d pods, want %d: %v", got, want, err)
	}
	c.waitForNodes(tb, ctx, n)
	return c
}

// boundPod is upstream scheduler_perf's pod-default template (100m CPU, 500Mi),
// already running on node.
func boundPod(name, node string) *v1.Pod {
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("500Mi")}
	pod := st.MakePod().Namespace("cycle").Name(name).UID(name).Node(node).
		Containers([]v1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10.2",
			Resources: v1.ResourceRequirements{Requests: res, Limits: res}}}).Obj()
	pod.Status.Phase = v1.PodRunning
	return pod
}

// startRegistry pushes the images' indexes to an in-memory registry (plain HTTP on
// loopback, insecure in ArchFilter's args).
func startRegistry(tb testing.TB) *registrytest.Memory {
	tb.Helper()
	reg := registrytest.NewMemory(tb)
	for _, img := range images {
		reg.Fixtures(tb).Index(img.repo, registrytest.OCI, img.platforms...)
	}
	return reg
}

// loadProfiles decodes the profiles as kube-scheduler decodes --config: default,
// minimal, minimal-all and skip-floor from the configuration below, archfilter
// from the deployed manifest's, with the test registries added to ArchFilter's args.
func loadProfiles(tb testing.TB, registries ...string) []schedconfig.KubeSchedulerProfile {
	tb.Helper()
	// Each added plugin is enabled as the manifest enables ArchFilter: under
	// multiPoint, and under filter, which makes it the first Filter plugin.
	added := func(profile, plugin string) string {
		return "- schedulerName: " + profile + "\n  plugins:\n" +
			"    multiPoint:\n      enabled:\n      - name: " + plugin + "\n" +
			"    filter:\n      enabled:\n      - name: " + plugin + "\n"
	}
	cfg := decodeConfig(tb, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"+
		"- schedulerName: "+profileDefault+"\n"+
		added(profileMinimal, minimalName)+added(profileMinimalAll, minimalAllName)+added(profileSkipFloor, skipFloorName)))
	data, err := os.ReadFile(defaultScheduler)
	if err != nil {
		tb.Fatal(err)
	}
	deployed := decodeConfig(tb, data)
	if len(deployed.Profiles) != 1 {
		tb.Fatalf("%s: want one profile, got %d", defaultScheduler, len(deployed.Profiles))
	}
	p := deployed.Profiles[0]
	p.SchedulerName = profileArchFilter
	args := archFilterArgs(p)
	if args == nil {
		tb.Fatalf("%s: no ArchFilter args", defaultScheduler)
	}
	for _, host := range registries {
		args.Registries = append(args.Registries, config.RegistryConfig{Host: host, Insecure: true})
	}
	return append(cfg.Profiles, p)
}

func decodeConfig(tb testing.TB, data []byte) *schedconfig.KubeSchedulerConfiguration {
	tb.Helper()
	obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		tb.Fatalf("decoding the scheduler configuration: %v", err)
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		tb.Fatalf("decoded a %T, want a KubeSchedulerConfiguration", obj)
	}
	return cfg
}

func archFilterArgs(p schedconfig.KubeSchedulerProfile) *config.ArchFilterArgs {
	for _, pc := range p.PluginConfig {
		if pc.Name == archfilter.Name {
			args, _ := pc.Args.(*config.ArchFilterArgs)
			return args
		}
	}
	return nil
}

// makeNode is test/perf's node-mixed.yaml: 60 % linux/amd64, 30 % linux/arm64,
// 10 % linux/s390x, interleaved by index, with scheduler_perf's capacity.
func makeNode(i int) *v1.Node {
	arch := "s390x"
	switch {
	case i%10 < 6:
		arch = "amd64"
	case i%10 < 9:
		arch = "arm64"
	}
	name := fmt.Sprintf("node-%05d", i)
	node := st.MakeNode().Name(name).
		Label(v1.LabelOSStable, "linux").Label(v1.LabelArchStable, arch).Label(v1.LabelHostname, name).
		Capacity(map[v1.ResourceName]string{v1.ResourcePods: "110", v1.ResourceCPU: "4", v1.ResourceMemory: "32Gi"}).Obj()
	node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	node.Status.Phase = v1.NodeRunning
	return node
}

// makePod is a pod of test/perf's templates: one container of img requesting
// (and limited to) 50m CPU and 250Mi, for profile; with affinity, a required
// node affinity kubernetes.io/arch In affinity.
func (c *cluster) makePod(name, profile string, img image, affinity []string) *v1.Pod {
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m"), v1.ResourceMemory: resource.MustParse("250Mi")}
	w := st.MakePod().Namespace("cycle").Name(name).UID(name).SchedulerName(profile).
		Containers([]v1.Container{{Name: "app", Image: c.registry + "/" + img.repo,
			Resources: v1.ResourceRequirements{Requests: res, Limits: res}}})
	if len(affinity) > 0 {
		w = w.NodeAffinityIn(v1.LabelArchStable, affinity, st.NodeSelectorTypeMatchExpressions)
	}
	return w.Obj()
}

// warmUp resolves every image through ArchFilter's PreEnqueue, as the first pod
// of an image is: the first call starts the resolution and holds the pod, and
// the pod is admitted once the answer is cached. The measured pods then take
// the production steady-state path (the resolver's Lookup in PreFilter).
func (c *cluster) warmUp(tb testing.TB, ctx context.Context) {
	tb.Helper()
	pre := c.archFilterPreEnqueue(tb)
	for i, img := range images {
		pod := c.makePod(fmt.Sprintf("warm-up-%d", i), profileArchFilter, img, nil)
		var last *fwk.Status
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			last = pre.PreEnqueue(ctx, pod)
			return last.IsSuccess(), nil
		})
		if err != nil {
			tb.Fatalf("ArchFilter did not admit a pod of %s: %v (last status: %v)", img.repo, err, last)
		}
	}
}

// waitForNodes waits until the scheduler's cache holds the n nodes, updates the
// snapshot SchedulePod reads (the scheduling loop does so before each cycle), and
// waits until ArchFilter's node index and platform table, fed by a handler of
// their own on the node informer, have them too: ArchFilter narrows the cycle of
// an s390x-only pod to the s390x nodes only once its index holds as many nodes as
// the snapshot.
func (c *cluster) waitForNodes(tb testing.TB, ctx context.Context, n int) {
	tb.Helper()
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return c.sched.Cache.NodeCount() == n, nil
	})
	if err != nil {
		tb.Fatalf("the scheduler's cache holds %d nodes, want %d: %v", c.sched.Cache.NodeCount(), n, err)
	}
	fw := c.sched.Profiles[profileArchFilter]
	snapshot, ok := fw.SnapshotSharedLister().(*internalcache.Snapshot)
	if !ok {
		tb.Fatalf("the framework's snapshot is a %T", fw.SnapshotSharedLister())
	}
	if err := c.sched.Cache.UpdateSnapshot(klog.FromContext(ctx), snapshot); err != nil {
		tb.Fatal(err)
	}
	if c.archCount["s390x"] == 0 {
		// Nodes without kubernetes.io/arch (upstream's templates): no index to wait for.
		return
	}
	pod := c.makePod("warm-up-index", profileArchFilter, imageS390x, nil)
	got := 0
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		res, s, _ := fw.RunPreFilterPlugins(ctx, framework.NewCycleState(), pod)
		if !s.IsSuccess() {
			return false, fmt.Errorf("PreFilter of an s390x-only pod: %v", s)
		}
		if res == nil {
			return false, nil
		}
		got = res.NodeNames.Len()
		return got == c.archCount["s390x"], nil
	})
	if err != nil {
		tb.Fatalf("ArchFilter's node index has %d s390x nodes, want %d: %v", got, c.archCount["s390x"], err)
	}
}

package archfilter

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/clock"

	fwk "k8s.io/kube-scheduler/framework"
)

// laggingHandle gives ArchFilter informers of its own, so a test decides when
// its node table sees a node the scheduler's cache already has.
type laggingHandle struct {
	fwk.Handle
	factory informers.SharedInformerFactory
}

func (h laggingHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }

// TestNoWrongBindWhileTableLags forces the race Reserve guards against, in a real
// kube-scheduler (scheduling queue, cycle, Reserve, binding) over a fake
// clientset: an s390x node is in the scheduler's snapshot, but not in
// ArchFilter's node table, which holds only the amd64 node. The pod's images run
// on linux/amd64 and linux/arm64, every platform the table knows, so PreFilter
// skips Filter; the pod prefers the s390x node (preferred node affinity), so the
// cycle chooses it. Reserve must reject it and nothing may be bound. Once the
// table sees the s390x node (and the scheduler sees no event at all), the pod is
// retried and bound to the amd64 node.
func TestNoWrongBindWhileTableLags(t *testing.T) {
	ctx := testContext(t)
	ctx, cancel := context.WithCancel(ctx)
	amd64, s390x := schedulableNode("amd64-1", "amd64"), schedulableNode("s390x-1", "s390x")
	pod := makePod("p", imgMulti).SchedulerName(v1.DefaultSchedulerName).Obj()
	pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 100, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{s390x.Name}}},
		}}},
	}}

	cs := fake.NewClientset(amd64, s390x, pod)
	var (
		mu    sync.Mutex
		binds []string
	)
	cs.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := action.(clienttesting.CreateAction).GetObject().(*v1.Binding)
		mu.Lock()
		binds = append(binds, b.Target.Name)
		mu.Unlock()
		return true, b, nil
	})
	bound := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), binds...)
	}
	// ArchFilter's own clientset: the amd64 node only, for now.
	lagCS := fake.NewClientset(amd64)
	lagWatches := trackWatches(lagCS)
	lagFactory := informers.NewSharedInformerFactory(lagCS, 0)
	factory := informers.NewSharedInformerFactory(cs, 0)
	res := newFakeResolver(t, clock.RealClock{}, standardResults(t, time.Now()))
	var plugin atomic.Pointer[ArchFilter]
	registry := frameworkruntime.Registry{
		Name: func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			pl, err := newPlugin(ctx, defaultArgs(t), laggingHandle{Handle: h, factory: lagFactory},
				deps{resolver: res, credentials: &fakeCredentials{}, leading: func() bool { return true }})
			plugin.Store(pl)
			return pl, err
		},
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	// The manifests enable ArchFilter through multiPoint, which enables Reserve.
	sched, err := scheduler.New(ctx, cs, factory, nil, profile.NewRecorderFactory(broadcaster),
		scheduler.WithProfiles(multiPointProfile(t)),
		scheduler.WithFrameworkOutOfTreeRegistry(registry))
	if err != nil {
		t.Fatalf("scheduler.New: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
		lagFactory.Shutdown()
		broadcaster.Shutdown()
	})
	factory.Start(ctx.Done())
	lagFactory.Start(ctx.Done())
	for _, f := range []informers.SharedInformerFactory{factory, lagFactory} {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				t.Fatalf("informer of %v did not sync", typ)
			}
		}
	}
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		t.Fatal(err)
	}
	rejected := func() float64 {
		v, err := testutil.GetCounterMetricValue(reserveRejections)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := rejected()
	// The informers' caches are synced, but ArchFilter's table is fed by its handlers,
	// which may not have run yet: with an empty table PreFilter cannot skip Filter
	// (Filter would then reject the s390x node by its labels, and the race this test
	// forces would not happen).
	pollFor(t, ctx, "ArchFilter's node table to hold the amd64 node", func() bool {
		return len(plugin.Load().platforms.snapshot().platforms) > 0
	})
	go sched.Run(ctx)

	pollFor(t, ctx, "Reserve to reject the s390x node", func() bool { return rejected() > before })
	if got := bound(); len(got) != 0 {
		t.Fatalf("pod bound to %v while ArchFilter's table lagged", got)
	}

	pollFor(t, ctx, "ArchFilter's node informer to watch", func() bool { return lagWatches.has("nodes") })
	if _, err := lagCS.CoreV1().Nodes().Create(ctx, s390x, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pollFor(t, ctx, "the pod to be bound", func() bool { return len(bound()) > 0 })
	if got := bound(); len(got) != 1 || got[0] != amd64.Name {
		t.Errorf("bindings %v, want one, to %s", got, amd64.Name)
	}
}

// schedulableNode is a linux node of arch with room for pods.
func schedulableNode(name, arch string) *v1.Node {
	return st.MakeNode().Name(name).
		Label(v1.LabelOSStable, "linux").Label(v1.LabelArchStable, arch).Label(v1.LabelHostname, name).
		Capacity(map[v1.ResourceName]string{v1.ResourcePods: "110", v1.ResourceCPU: "4", v1.ResourceMemory: "32Gi"}).Obj()
}

// multiPointProfile is the default profile with ArchFilter enabled as the
// manifests enable it (multiPoint), decoded as kube-scheduler decodes --config.
func multiPointProfile(t *testing.T) schedconfig.KubeSchedulerProfile {
	t.Helper()
	obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: `+Name+`
`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok || len(cfg.Profiles) != 1 {
		t.Fatalf("decoded %T", obj)
	}
	return cfg.Profiles[0]
}

package archfilter

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

// benchHarness builds the standard cluster. Benchmarks log through the global
// klog logger (verbosity 0), as a production scheduler does, rather than
// through ktesting, which would format every V(4) line.
func benchHarness(b *testing.B) (context.Context, *harness) {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	return ctx, newHarness(b, ctx, harnessConfig{})
}

// benchPod has three cached images (init, sidecar-less main, image volume)
// that intersect to linux/arm64.
func benchPod() *v1.Pod {
	pod := makePod("bench", imgMulti, imgARM64).Obj()
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: imgEverywhere}}
	return pod
}

func BenchmarkFilter(b *testing.B) {
	ctx, h := benchHarness(b)
	pod := benchPod()
	state := framework.NewCycleState()
	if _, s := h.pl.PreFilter(ctx, state, pod, h.infos); !s.IsSuccess() {
		b.Fatalf("PreFilter: %v", s)
	}
	for _, bc := range []struct {
		name   string
		node   string
		accept bool
	}{
		{name: "accept", node: nodeARM64, accept: true},
		{name: "reject", node: nodeAMD64, accept: false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ni := nodeInfo(nodeByName(b, h.nodes, bc.node))
			if got := h.pl.Filter(ctx, state, pod, ni).IsSuccess(); got != bc.accept {
				b.Fatalf("Filter(%s) accepted = %v, want %v", bc.node, got, bc.accept)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				h.pl.Filter(ctx, state, pod, ni)
			}
		})
	}
}

// BenchmarkNodeAffinityFilter is the in-tree reference: NodeAffinity's Filter
// for a pod requiring kubernetes.io/arch In [arm64], on the same nodes.
func BenchmarkNodeAffinityFilter(b *testing.B) {
	ctx, h := benchHarness(b)
	p, err := nodeaffinity.New(ctx, &schedconfig.NodeAffinityArgs{}, h.handle, plfeature.Features{})
	if err != nil {
		b.Fatal(err)
	}
	na := p.(*nodeaffinity.NodeAffinity)
	pod := makePod("bench", imgMulti).NodeAffinityIn(v1.LabelArchStable, []string{"arm64"}, st.NodeSelectorTypeMatchExpressions).Obj()
	state := framework.NewCycleState()
	if _, s := na.PreFilter(ctx, state, pod, h.infos); !s.IsSuccess() {
		b.Fatalf("PreFilter: %v", s)
	}
	for _, bc := range []struct {
		name   string
		node   string
		accept bool
	}{
		{name: "accept", node: nodeARM64, accept: true},
		{name: "reject", node: nodeAMD64, accept: false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ni := nodeInfo(nodeByName(b, h.nodes, bc.node))
			if got := na.Filter(ctx, state, pod, ni).IsSuccess(); got != bc.accept {
				b.Fatalf("Filter(%s) accepted = %v, want %v", bc.node, got, bc.accept)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				na.Filter(ctx, state, pod, ni)
			}
		})
	}
}

func BenchmarkPreFilterWarm(b *testing.B) {
	ctx, h := benchHarness(b)
	for _, bc := range []struct {
		name string
		pod  *v1.Pod
		want fwk.Code
	}{
		// linux/arm64: 3 of 6 nodes, a PreFilterResult.
		{name: "minority", pod: benchPod(), want: fwk.Success},
		// linux/amd64,linux/arm64: 4 of 6 nodes, Filter runs everywhere.
		{name: "majority", pod: makePod("bench", imgMulti, imgMulti, imgData).Obj(), want: fwk.Success},
		// every platform: no narrowing; Filter runs and accepts every node
		// (the node index may lag the snapshot, so it never skips Filter).
		{name: "everywhere", pod: makePod("bench", imgEverywhere, imgEverywhere, imgData).Obj(), want: fwk.Success},
	} {
		b.Run(bc.name, func(b *testing.B) {
			state := framework.NewCycleState()
			if _, s := h.pl.PreFilter(ctx, state, bc.pod, h.infos); s.Code() != bc.want {
				b.Fatalf("PreFilter: %v, want %v", s, bc.want)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				h.pl.PreFilter(ctx, state, bc.pod, h.infos)
			}
		})
	}
}

func BenchmarkPreEnqueueWarm(b *testing.B) {
	ctx, h := benchHarness(b)
	pod := benchPod()
	if s := h.pl.PreEnqueue(ctx, pod); !s.IsSuccess() {
		b.Fatalf("PreEnqueue: %v", s)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.pl.PreEnqueue(ctx, pod)
	}
}

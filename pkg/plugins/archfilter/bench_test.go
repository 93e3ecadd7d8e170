package archfilter

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
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
	benchFilterPaths(b, h, func(ni fwk.NodeInfo) *fwk.Status { return h.pl.Filter(ctx, state, pod, ni) })
}

// benchFilterPaths runs filter on an arm64 node (accepted) and an amd64 node
// (rejected): serially, and as the scheduler runs Filter, from 16 goroutines
// at once (its parallelism) on however many cores there are, which shows
// contention on shared state (atomics, metrics) that a serial loop hides.
func benchFilterPaths(b *testing.B, h *harness, filter func(fwk.NodeInfo) *fwk.Status) {
	const schedulerParallelism = 16
	for _, bc := range []struct {
		name   string
		node   string
		accept bool
	}{
		{name: "accept", node: nodeARM64, accept: true},
		{name: "reject", node: nodeAMD64, accept: false},
	} {
		ni := nodeInfo(nodeByName(b, h.nodes, bc.node))
		if got := filter(ni).IsSuccess(); got != bc.accept {
			b.Fatalf("Filter(%s) accepted = %v, want %v", bc.node, got, bc.accept)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				filter(ni)
			}
		})
		b.Run(fmt.Sprintf("%s-parallel%d", bc.name, schedulerParallelism), func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism((schedulerParallelism + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					filter(ni)
				}
			})
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
	benchFilterPaths(b, h, func(ni fwk.NodeInfo) *fwk.Status { return na.Filter(ctx, state, pod, ni) })
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
		// every platform of the table: Skip, and Reserve checks the chosen node.
		{name: "everywhere", pod: makePod("bench", imgEverywhere, imgEverywhere, imgData).Obj(), want: fwk.Skip},
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

// BenchmarkReserve is Reserve once per scheduled pod: reading the cycle state
// when Filter ran, and checking the chosen node in the snapshot when it was
// skipped.
func BenchmarkReserve(b *testing.B) {
	ctx, h := benchHarness(b)
	for _, bc := range []struct {
		name string
		pod  *v1.Pod
	}{
		{name: "filtered", pod: benchPod()},
		{name: "skipped", pod: makePod("bench", imgEverywhere, imgEverywhere, imgData).Obj()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			state := framework.NewCycleState()
			h.pl.PreFilter(ctx, state, bc.pod, h.infos)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if s := h.pl.Reserve(ctx, state, bc.pod, nodeARM64); !s.IsSuccess() {
					b.Fatalf("Reserve: %v", s)
				}
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

// BenchmarkFilterClusterScan runs Filter the way a scheduling cycle on a large cluster
// does: every call on another of 5 000 nodes (60 % amd64, 30 % arm64, 10 % s390x, with
// a kubelet's labels and image list, decoded from JSON as an informer decodes them),
// for a pod whose images run on linux/amd64 and linux/arm64. Unlike BenchmarkFilter's
// single node, a node's memory is rarely in the CPU cache here, as in the scheduler.
//
//	table         nodes the plugin's node informer delivered (the platform table)
//	labels        nodes it has not: Filter reads their labels (the fallback)
//	nodeaffinity  the in-tree NodeAffinity Filter, for the same pod requiring
//	              kubernetes.io/arch In [amd64, arm64] (the reference)
func BenchmarkFilterClusterScan(b *testing.B) {
	ctx, h := benchHarness(b)
	const clusterSize = 5000
	delivered := clusterNodes(b, clusterSize)
	for _, node := range delivered {
		h.pl.platforms.set(node)
	}
	pod := makePod("bench", imgMulti).Obj()
	state := framework.NewCycleState()
	if _, s := h.pl.PreFilter(ctx, state, pod, h.infos); !s.IsSuccess() {
		b.Fatalf("PreFilter: %v", s)
	}

	p, err := nodeaffinity.New(ctx, &schedconfig.NodeAffinityArgs{}, h.handle, plfeature.Features{})
	if err != nil {
		b.Fatal(err)
	}
	na := p.(*nodeaffinity.NodeAffinity)
	naPod := makePod("bench", imgMulti).NodeAffinityIn(v1.LabelArchStable, []string{"amd64", "arm64"}, st.NodeSelectorTypeMatchExpressions).Obj()
	naState := framework.NewCycleState()
	if _, s := na.PreFilter(ctx, naState, naPod, h.infos); !s.IsSuccess() {
		b.Fatalf("NodeAffinity PreFilter: %v", s)
	}

	for _, bc := range []struct {
		name   string
		nodes  []*v1.Node
		filter func(fwk.NodeInfo) *fwk.Status
	}{
		{"table", delivered, func(ni fwk.NodeInfo) *fwk.Status { return h.pl.Filter(ctx, state, pod, ni) }},
		{"labels", clusterNodes(b, clusterSize), func(ni fwk.NodeInfo) *fwk.Status { return h.pl.Filter(ctx, state, pod, ni) }},
		{"nodeaffinity", delivered, func(ni fwk.NodeInfo) *fwk.Status { return na.Filter(ctx, naState, naPod, ni) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			infos := nodeInfos(bc.nodes)
			accepted := 0
			for _, ni := range infos {
				if bc.filter(ni).IsSuccess() {
					accepted++
				}
			}
			if want := clusterSize * 9 / 10; accepted != want {
				b.Fatalf("accepted %d of %d nodes, want %d", accepted, clusterSize, want)
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				bc.filter(infos[i])
				// A stride, so that neighbouring calls do not share cache lines either.
				if i += 7; i >= len(infos) {
					i -= len(infos)
				}
			}
		})
	}
}

// clusterNodes decodes n nodes the way an informer does, each a separate set of
// allocations: kubelet labels, 20 images, os/arch in status.
func clusterNodes(b *testing.B, n int) []*v1.Node {
	b.Helper()
	archs := [10]string{"amd64", "amd64", "amd64", "amd64", "amd64", "amd64", "arm64", "arm64", "arm64", "s390x"}
	nodes := make([]*v1.Node, n)
	for i := range n {
		arch := archs[i%len(archs)]
		var images strings.Builder
		for j := range 20 {
			fmt.Fprintf(&images, `{"names":["registry.example.com/app%d@sha256:%064d","registry.example.com/app%d:v1"],"sizeBytes":%d},`, j, i*20+j, j, 1<<20+j)
		}
		data := fmt.Sprintf(`{"metadata":{"name":"node-%d","labels":{`+
			`"beta.kubernetes.io/arch":%[2]q,"beta.kubernetes.io/os":"linux","kubernetes.io/arch":%[2]q,`+
			`"kubernetes.io/hostname":"node-%[1]d","kubernetes.io/os":"linux","node.kubernetes.io/instance-type":"m7.large",`+
			`"topology.kubernetes.io/region":"eu-west-1","topology.kubernetes.io/zone":"eu-west-1a"}},`+
			`"status":{"allocatable":{"cpu":"4","memory":"32Gi","pods":"110"},"images":[%[3]s{"names":["pause"],"sizeBytes":1}],`+
			`"nodeInfo":{"operatingSystem":"linux","architecture":%[2]q}}}`, i, arch, images.String())
		var node v1.Node
		if err := json.Unmarshal([]byte(data), &node); err != nil {
			b.Fatal(err)
		}
		nodes[i] = &node
	}
	return nodes
}

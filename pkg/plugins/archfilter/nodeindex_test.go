package archfilter

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/pkg/platform"
)

// TestNodeIndexFollowsInformer adds, relabels and deletes nodes through the
// clientset and checks PreFilter's answer once the index has caught up.
func TestNodeIndexFollowsInformer(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	amdPod := makePod("amd", imgAMD64).Obj()
	s390xPod := makePod("s390x", imgS390X).Obj()

	// snapshot sets the scheduler's view to the clientset's nodes.
	snapshot := func() {
		list, err := h.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h.nodes = nil
		for i := range list.Items {
			h.nodes = append(h.nodes, &list.Items[i])
		}
		h.infos = nodeInfos(h.nodes)
	}
	expect := func(what string, pod *v1.Pod, want *fwk.PreFilterResult) {
		t.Helper()
		snapshot()
		var last *fwk.PreFilterResult
		var lastStatus *fwk.Status
		h.poll(ctx, what, func() bool {
			_, last, lastStatus = h.preFilter(ctx, pod)
			return lastStatus.IsSuccess() && cmp.Equal(want, last)
		})
	}
	expect("initial amd64 result", amdPod, result(nodeAMD64, nodeNoPlatform))

	added := linuxNode("amd64-2", "amd64")
	if _, err := h.client.CoreV1().Nodes().Create(ctx, added, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("added amd64 node in the result", amdPod, result(nodeAMD64, "amd64-2", nodeNoPlatform))

	relabelled := relabel(added, v1.LabelArchStable, "s390x")
	if _, err := h.client.CoreV1().Nodes().Update(ctx, relabelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("relabelled node gone from the amd64 result", amdPod, result(nodeAMD64, nodeNoPlatform))
	expect("relabelled node in the s390x result", s390xPod, result("amd64-2", nodeNoPlatform, nodeS390X))

	if err := h.client.CoreV1().Nodes().Delete(ctx, "amd64-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("deleted node gone from the s390x result", s390xPod, result(nodeNoPlatform, nodeS390X))
}

func TestNodeIndex(t *testing.T) {
	amd := linuxNode("a", "amd64")
	arm := linuxNode("b", "arm64")
	bare := makeNode("c", nil)
	tests := []struct {
		name      string
		ops       func(x *nodeIndex)
		set       string
		want      []string
		wantTotal int
	}{
		{
			name:      "add",
			ops:       func(x *nodeIndex) { x.set(amd); x.set(arm); x.set(bare) },
			set:       "linux/arm64",
			want:      []string{"b", "c"},
			wantTotal: 3,
		},
		{
			name:      "update with the same platform is a no-op",
			ops:       func(x *nodeIndex) { x.set(amd); x.set(relabel(amd, "zone", "z")) },
			set:       "linux/amd64",
			want:      []string{"a"},
			wantTotal: 1,
		},
		{
			name:      "relabel moves the node",
			ops:       func(x *nodeIndex) { x.set(amd); x.set(relabel(amd, v1.LabelArchStable, "arm64")) },
			set:       "linux/amd64",
			want:      []string{},
			wantTotal: 1,
		},
		{
			name:      "remove",
			ops:       func(x *nodeIndex) { x.set(amd); x.set(arm); x.remove("a"); x.remove("unknown") },
			set:       "linux/amd64,linux/arm64",
			want:      []string{"b"},
			wantTotal: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := newNodeIndex()
			tc.ops(x)
			names, total := x.matching(mustSet(t, tc.set))
			if diff := cmp.Diff(sorted(tc.want...), sorted(names.UnsortedList()...), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("matching(%s) (-want,+got):\n%s", tc.set, diff)
			}
			if total != tc.wantTotal {
				t.Errorf("total = %d, want %d", total, tc.wantTotal)
			}
		})
	}
}

// TestNodeIndexSetsAreNotMutated: a set handed to a scheduling cycle must not
// change when the index does.
func TestNodeIndexSetsAreNotMutated(t *testing.T) {
	x := newNodeIndex()
	x.set(linuxNode("a", "amd64"))
	names, _ := x.matching(platform.NewSet(platform.Platform{OS: "linux", Architecture: "amd64"}))
	before := sorted(names.UnsortedList()...)
	x.set(linuxNode("b", "amd64"))
	x.remove("a")
	if diff := cmp.Diff(before, sorted(names.UnsortedList()...)); diff != "" {
		t.Errorf("handed-out set changed (-before,+after):\n%s", diff)
	}
}

// TestNodeIndexNarrowedSetsAreNotMutated: the set narrow hands a cycle stays as it
// was while nodes of its architecture come and go, and the index follows them.
func TestNodeIndexNarrowedSetsAreNotMutated(t *testing.T) {
	x := newNodeIndex()
	for _, n := range []string{"a1", "a2", "a3"} {
		x.set(linuxNode(n, "amd64"))
	}
	x.set(linuxNode("s1", "s390x"))
	s390x := platform.NewSet(platform.Platform{OS: "linux", Architecture: "s390x"})
	handed := x.narrow(s390x, 4)
	if diff := cmp.Diff([]string{"s1"}, sorted(handed.UnsortedList()...)); diff != "" {
		t.Fatalf("narrow (-want,+got):\n%s", diff)
	}
	x.set(linuxNode("s2", "s390x"))
	x.remove("s1")
	if diff := cmp.Diff([]string{"s1"}, sorted(handed.UnsortedList()...)); diff != "" {
		t.Errorf("the set handed to a cycle changed (-before,+after):\n%s", diff)
	}
	now, _ := x.matching(s390x)
	if diff := cmp.Diff([]string{"s2"}, sorted(now.UnsortedList()...)); diff != "" {
		t.Errorf("the index after the changes (-want,+got):\n%s", diff)
	}
}

// BenchmarkNodeIndexFill is the index filled with a cluster's nodes, as the node
// informer's first list fills it: the time per node stays flat as the cluster grows
// (a set is copied only after a cycle took it, not on every node added).
func BenchmarkNodeIndexFill(b *testing.B) {
	for _, n := range []int{1000, 5000, 15000} {
		nodes := make([]*v1.Node, n)
		for i := range nodes {
			nodes[i] = linuxNode(fmt.Sprintf("node-%05d", i), []string{"amd64", "amd64", "arm64", "s390x"}[i%4])
		}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			for range b.N {
				x := newNodeIndex()
				for _, node := range nodes {
					x.set(node)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/node")
		})
	}
}

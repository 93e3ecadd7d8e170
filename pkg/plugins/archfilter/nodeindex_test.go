package archfilter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/internal/schedfw"
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
	expect := func(what string, pod *v1.Pod, want *schedfw.PreFilterResult) {
		t.Helper()
		snapshot()
		var last *schedfw.PreFilterResult
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

package archfilter

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// failedScheduling runs one cycle of pod over nodes as the scheduler's
// findNodesThatFitPod does, with ArchFilter the last Filter plugin: a node that an
// earlier plugin rejects (others, by node name) is not filtered by ArchFilter. It
// returns the message of the scheduler's FitError, which its FailedScheduling event
// and the pod's PodScheduled condition carry (without the PostFilter plugins' part).
func failedScheduling(ctx context.Context, t *testing.T, h *harness, pod *v1.Pod, nodes []*v1.Node, others map[string]*fwk.Status) string {
	t.Helper()
	state := framework.NewCycleState()
	res, s := h.pl.PreFilter(ctx, state, pod, nodeInfos(nodes))
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	switch {
	case s.Code() == fwk.Skip:
		t.Fatalf("PreFilter skipped Filter")
	case !s.IsSuccess():
		s.SetPlugin(Name)
		diagnosis.NodeToStatus.SetAbsentNodesStatus(s)
		diagnosis.PreFilterMsg = s.Message()
	default:
		if !res.AllNodes() {
			diagnosis.NodeToStatus.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(sets.New(Name)))))
		}
		for _, node := range nodes {
			if !res.AllNodes() && !res.NodeNames.Has(node.Name) {
				continue
			}
			if st, ok := others[node.Name]; ok {
				diagnosis.NodeToStatus.Set(node.Name, st)
				continue
			}
			st := h.pl.Filter(ctx, state, pod, nodeInfo(node))
			if st.IsSuccess() {
				t.Fatalf("Filter accepted node %s: the cycle does not fail", node.Name)
			}
			st.SetPlugin(Name) // as RunFilterPlugins does
			diagnosis.NodeToStatus.Set(node.Name, st)
		}
	}
	return (&framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: diagnosis}).Error()
}

// TestFailedSchedulingIsShort: the scheduler aggregates Filter's reasons into one
// clause per distinct reason, counting the nodes of each. ArchFilter gives every node
// it rejects in a cycle the same reason, so a pod whose images run on no node's
// platform reads as upstream's plugins do ("6 node(s) didn't match …"), not once per
// node platform with what excludes it (about 1 000 characters for a riscv64 pod;
// that detail is the pod's ImagePlatformsResolved event). The nodes are the
// informer's, so Filter answers from the platform table, as in a scheduler.
func TestFailedSchedulingIsShort(t *testing.T) {
	nodes := []*v1.Node{
		linuxNode("amd64-a", "amd64"), linuxNode("amd64-b", "amd64"),
		linuxNode("arm64-a", "arm64"), linuxNode("arm64-b", "arm64"),
		linuxNode("s390x-a", "s390x"), linuxNode("s390x-b", "s390x"),
	}
	full := func(names ...string) map[string]*fwk.Status {
		out := map[string]*fwk.Status{}
		for _, n := range names {
			out[n] = fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit")
		}
		return out
	}
	tests := []struct {
		name   string
		pod    *v1.Pod
		others map[string]*fwk.Status
		want   string
		// wantExplained is the pod's ImagePlatformsResolved event ("" for none).
		wantExplained string
	}{
		{
			name:          "riscv64 only: every node, one clause",
			pod:           makePod("riscv", imgRISCV).Obj(),
			want:          "0/6 nodes are available: 6 node(s) didn't match the platforms of the pod's images (linux/riscv64).",
			wantExplained: explained("linux/riscv64", `container "con0" (`+imgRISCV+`) does not run on linux/amd64, linux/arm64, linux/s390x`),
		},
		{
			name:   "the nodes of the pod's platforms are full",
			pod:    makePod("multi", imgMulti).Obj(),
			others: full("amd64-a", "amd64-b", "arm64-a", "arm64-b"),
			want:   "0/6 nodes are available: 2 node(s) didn't match the platforms of the pod's images (linux/amd64,linux/arm64), 4 Insufficient cpu.",
			wantExplained: explained("linux/amd64,linux/arm64",
				`container "con0" (`+imgMulti+`) does not run on linux/s390x`),
		},
		{
			// Two of six nodes: PreFilter narrows the cycle to them, and the
			// scheduler counts the others with its own reason for a
			// PreFilterResult; the event says what excludes each platform.
			name:   "containers exclude different platforms, a minority platform full",
			pod:    makePod("amd", imgMulti, imgAMD64).Obj(),
			others: full("amd64-a", "amd64-b"),
			want:   "0/6 nodes are available: 2 Insufficient cpu, 4 node(s) didn't satisfy plugin(s) [ArchFilter].",
			wantExplained: explained("linux/amd64", `container "con1" (`+imgAMD64+`) does not run on linux/arm64; `+
				`container "con0" (`+imgMulti+`) does not run on linux/s390x`),
		},
		{
			name: "images share no platform: PreFilter's reason",
			pod:  makePod("none", imgAMD64, imgARM64).Obj(),
			want: "0/6 nodes are available: " + ReasonNoCommonPlatform + `: container "con1" (` + imgARM64 + `) runs on none of linux/amd64, the platforms of the images before it.`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			h := newHarness(t, ctx, harnessConfig{nodes: nodes})
			lister := h.factory.Core().V1().Nodes().Lister()
			informed := make([]*v1.Node, len(nodes))
			for i, n := range nodes {
				node, err := lister.Get(n.Name)
				if err != nil {
					t.Fatal(err)
				}
				informed[i] = node
			}
			got := failedScheduling(ctx, t, h, tc.pod, informed, tc.others)
			t.Logf("FailedScheduling (%d characters): %s", len(got), got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("FailedScheduling (-want,+got):\n%s", diff)
			}
			if n := strings.Count(got, ReasonPlatformMismatch); n > 1 {
				t.Errorf("FailedScheduling says %q %d times, want one clause", ReasonPlatformMismatch, n)
			}
			if len(got) >= 300 {
				t.Errorf("FailedScheduling is %d characters, want fewer than 300", len(got))
			}
			var want []string
			if tc.wantExplained != "" {
				want = []string{tc.wantExplained}
			}
			if diff := cmp.Diff(want, withReason(h.events(), EventResolved)); diff != "" {
				t.Errorf("%s events (-want,+got):\n%s", EventResolved, diff)
			}
		})
	}
}

package archfilter

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/platform"
)

// placeable runs PreFilter for pod and then, for every node of h.nodes (the
// snapshot), what the scheduler runs for it: Filter, unless PreFilter skipped it
// or left the node out of its result, and Reserve, as if the cycle had chosen the
// node. It returns the nodes the pod may be bound to, and whether PreFilter
// skipped Filter with a set Reserve checks.
func (h *harness) placeable(ctx context.Context, pod *v1.Pod) (nodes []string, skipped bool) {
	h.t.Helper()
	state, res, status := h.preFilter(ctx, pod)
	if !status.IsSuccess() && status.Code() != fwk.Skip {
		return nil, false
	}
	if s, err := readState(state); err == nil {
		skipped = s.filterSkipped
	}
	for _, n := range h.nodes {
		if status.IsSuccess() {
			if !res.AllNodes() && !res.NodeNames.Has(n.Name) {
				continue
			}
			if !h.filter(ctx, state, pod, n).IsSuccess() {
				continue
			}
		}
		if s := h.pl.Reserve(ctx, state, pod, n.Name); s.IsSuccess() {
			nodes = append(nodes, n.Name)
		} else if s.Code() != fwk.Unschedulable {
			h.t.Errorf("Reserve on %s: %v, want Success or Unschedulable", n.Name, s)
		}
	}
	return sorted(nodes...), skipped
}

// TestSkipAndReserveAgreeWithFilter: whatever the platform table holds, and
// however far it lags the snapshot, a pod is placeable exactly on the nodes
// whose labels its decision allows, as Filter alone would have it. Pods cover
// declared platforms, Windows builds, the 32-bit rule, arm variants on an arm64
// node, spec.os and failurePolicy Ignore with fallback platforms.
func TestSkipAndReserveAgreeWithFilter(t *testing.T) {
	snapshot := append(testNodes(),
		linuxNode("linux-arm", "arm"),
		linuxNode("linux-riscv64", "riscv64"),
		makeNode("windows-amd64-ltsc2022", map[string]string{
			v1.LabelOSStable: "windows", v1.LabelArchStable: "amd64", v1.LabelWindowsBuild: "10.0.20348",
		}))
	pods := []*v1.Pod{
		makePod("amd64", imgAMD64).Obj(),
		makePod("multi", imgMulti).Obj(),
		makePod("everywhere", imgEverywhere).Obj(),
		makePod("armv7", imgARMv7).Obj(),
		makePod("riscv64", imgRISCV).Obj(),
		makePod("win2019", imgWindows).Obj(),
		makePod("win2022", imgWin2022).Obj(),
		makePod("declared", "unknown.example.com/x:1").Annotation(annotations.Platforms, "linux/s390x,linux/arm64").Obj(),
		withOS(makePod("everywhere-linux", imgEverywhere).Obj(), v1.Linux),
		makePod("failed-open", imgFailed).Obj(),
		makePod("data", imgData).Obj(),
	}
	// Tables: complete, each node alone, and the snapshot's first nodes.
	tables := map[string][]*v1.Node{"all": snapshot, "none": {}}
	for i, n := range snapshot {
		tables["only "+n.Name] = []*v1.Node{n}
		tables[fmt.Sprintf("first %d", i+1)] = snapshot[:i+1]
	}
	for _, run32 := range []bool{false, true} {
		args := defaultArgs(t)
		args.FailurePolicy = config.FailurePolicyIgnore
		args.FallbackPlatforms = []string{"linux/amd64", "linux/arm64"}
		if run32 {
			args.Run32BitImagesOn = []string{"arm64"}
		}
		ctx := testContext(t)
		h := newHarness(t, ctx, harnessConfig{args: args, nodes: snapshot})
		for name, table := range tables {
			t.Run(fmt.Sprintf("run32=%v/table=%s", run32, name), func(t *testing.T) {
				// The table and the index as their informer handler would have
				// left them after seeing only table's nodes.
				h.pl.platforms, h.pl.nodes = newPlatformTable(), newNodeIndex()
				for _, n := range table {
					h.pl.platforms.set(n)
					h.pl.nodes.set(n)
				}
				for _, pod := range pods {
					got, _ := h.placeable(ctx, pod)
					want := wantPlaceable(h, pod, snapshot)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("pod %s: placeable nodes (-want,+got):\n%s", pod.Name, diff)
					}
				}
			})
		}
	}
}

// wantPlaceable is what Filter alone, on the nodes' labels, accepts.
func wantPlaceable(h *harness, pod *v1.Pod, nodes []*v1.Node) []string {
	var out []string
	d := h.pl.settings.Decide(pod, h.pl.lookupFor(pod))
	if d.Rejection != nil {
		return nil
	}
	for _, n := range nodes {
		np, known := platform.FromNode(n)
		if !known || d.Platforms.MatchesNode(np) {
			out = append(out, n.Name)
		}
	}
	return sorted(out...)
}

// TestPreFilterSkipsOnlyOnACompleteTable: Skip needs a table that knows the
// platforms of the cluster: not an empty one, nor one that overflowed.
func TestPreFilterSkipsOnlyOnACompleteTable(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	pod := makePod("p", imgEverywhere).Obj()
	if _, skipped := h.placeable(ctx, pod); !skipped {
		t.Fatal("PreFilter did not skip Filter for a pod of every node platform")
	}
	h.pl.platforms.mu.Lock()
	h.pl.platforms.overflowed = true
	h.pl.platforms.dirty.Store(true)
	h.pl.platforms.mu.Unlock()
	if _, skipped := h.placeable(ctx, pod); skipped {
		t.Error("PreFilter skipped Filter with an overflowed table")
	}
}

// TestReserveRejectsAndActivates: the node the cycle chose is of a platform the
// table has not seen and the pod cannot run on: Reserve fails the cycle with
// Unschedulable and activates the pod, so that it is retried.
func TestReserveRejectsAndActivates(t *testing.T) {
	ctx := testContext(t)
	s390x := linuxNode(nodeS390X, "s390x")
	h := newHarness(t, ctx, harnessConfig{
		nodes:    []*v1.Node{linuxNode(nodeAMD64, "amd64")},
		snapshot: []*v1.Node{linuxNode(nodeAMD64, "amd64"), s390x},
	})
	pod := makePod("p", imgMulti).Obj()
	state, _, status := h.preFilter(ctx, pod)
	if status.Code() != fwk.Skip {
		t.Fatalf("PreFilter: %v, want Skip", status)
	}
	if s := h.pl.Reserve(ctx, state, pod, nodeAMD64); !s.IsSuccess() {
		t.Errorf("Reserve on %s: %v", nodeAMD64, s)
	}
	if got := h.act.activations("default/p"); got != 0 {
		t.Errorf("pod activated %d times after a successful Reserve", got)
	}
	s := h.pl.Reserve(ctx, state, pod, nodeS390X)
	wantMsg := ReasonPlatformMismatch + " (linux/amd64,linux/arm64): node linux-s390x is linux/s390x, a platform new to ArchFilter's node table; retrying"
	if diff := cmp.Diff(want(fwk.Unschedulable, wantMsg), statusOf(s)); diff != "" {
		t.Errorf("Reserve on %s (-want,+got):\n%s", nodeS390X, diff)
	}
	if got := h.act.activations("default/p"); got != 1 {
		t.Errorf("pod activated %d times after Reserve rejected it, want 1", got)
	}
	// A pod whose Filter ran is not checked again.
	state = framework.NewCycleState()
	if s := h.pl.Reserve(ctx, state, pod, nodeS390X); !s.IsSuccess() {
		t.Errorf("Reserve without PreFilter's state: %v", s)
	}
}

// TestReserveAllocs: the accept path, run once per scheduled pod, does not allocate.
func TestReserveAllocs(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	pod := makePod("p", imgEverywhere).Obj()
	state, _, status := h.preFilter(ctx, pod)
	if status.Code() != fwk.Skip {
		t.Fatalf("PreFilter: %v, want Skip", status)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if s := h.pl.Reserve(ctx, state, pod, nodeARM64); !s.IsSuccess() {
			t.Fatalf("Reserve: %v", s)
		}
	})
	if allocs != 0 {
		t.Errorf("Reserve allocates %v times per call, want 0", allocs)
	}
}

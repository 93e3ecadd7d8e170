package archfilter

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/platform"
)

// TestPlatformTableFollowsObjects checks that the table answers for exactly the objects
// it was given: a replaced or deleted node's old object is dropped, and the new one
// carries its new platform.
func TestPlatformTableFollowsObjects(t *testing.T) {
	table := newPlatformTable()
	amd := linuxNode("n1", "amd64")
	table.set(amd)
	snap := table.snapshot()
	if got, want := platformIn(snap, amd), "linux/amd64"; got != want {
		t.Errorf("after add: %q, want %q", got, want)
	}
	if table.snapshot() != snap {
		t.Error("snapshot copied the table although no node changed")
	}

	arm := linuxNode("n1", "arm64") // the same node, relabelled: a new object
	table.set(arm)
	next := table.snapshot()
	if got, want := platformIn(next, arm), "linux/arm64"; got != want {
		t.Errorf("after update: %q, want %q", got, want)
	}
	if got := platformIn(next, amd); got != "" {
		t.Errorf("after update, the old object is still in the table as %q", got)
	}
	if got, want := platformIn(snap, amd), "linux/amd64"; got != want {
		t.Errorf("an earlier snapshot changed: %q, want %q", got, want)
	}

	table.remove("n1")
	if got := platformIn(table.snapshot(), arm); got != "" {
		t.Errorf("after delete: %q, want nothing", got)
	}
	table.remove("n1") // deleting twice is harmless
}

func platformIn(s *platformSnapshot, node *v1.Node) string {
	id, ok := s.ids[node]
	if !ok {
		return ""
	}
	return s.platforms[id].String()
}

// TestByPlatformAgreesWithLabels checks the table's answer against the labels' for
// every kind of node, delivered or not, and for pods of several platform sets.
func TestByPlatformAgreesWithLabels(t *testing.T) {
	nodes := append(testNodes(),
		makeNode("windows-2022", map[string]string{v1.LabelOSStable: "windows", v1.LabelArchStable: "amd64", v1.LabelWindowsBuild: "10.0.20348"}),
		makeNode("status-only", nil),
	)
	nodes[len(nodes)-1].Status.NodeInfo = v1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "s390x"}
	table := newPlatformTable()
	delivered := len(nodes) - 2 // the table knows the standard cluster, not the last two
	for _, node := range nodes[:delivered] {
		table.set(node)
	}
	snap := table.snapshot()
	ltsc2019 := platform.Platform{OS: "windows", Architecture: "amd64", OSVersion: windowsBuildLTSC2019 + ".1234"}
	for _, set := range []platform.Set{
		mustSet(t, "linux/amd64"),
		mustSet(t, "linux/amd64,linux/arm64"),
		mustSet(t, "linux/s390x"),
		mustSet(t, "windows/amd64,linux/arm64/v8"),
		platform.NewSet(ltsc2019),
	} {
		m := newByPlatform(snap, allows(set))
		for i, node := range nodes {
			np, ok := platform.FromNode(node)
			want := !ok || set.MatchesNode(np)
			if got := m.of(node); got != want {
				t.Errorf("set %s, node %s (delivered: %v): allows = %v, want %v", set, node.Name, i < delivered, got, want)
			}
		}
	}
}

// TestPlatformTableBound: nodes of platforms beyond maxTablePlatforms are read from
// their labels.
func TestPlatformTableBound(t *testing.T) {
	table := newPlatformTable()
	var last *v1.Node
	for i := range maxTablePlatforms + 1 {
		last = makeNode(fmt.Sprintf("w%d", i), map[string]string{v1.LabelOSStable: "windows", v1.LabelArchStable: "amd64", v1.LabelWindowsBuild: fmt.Sprintf("10.0.%d", i)})
		table.set(last)
	}
	snap := table.snapshot()
	if n := len(snap.platforms); n != maxTablePlatforms {
		t.Errorf("%d platforms numbered, want %d", n, maxTablePlatforms)
	}
	if _, ok := snap.ids[last]; ok {
		t.Error("a node beyond the bound got an id")
	}
	m := newByPlatform(snap, allows(platform.NewSet(platform.Platform{OS: "windows", Architecture: "amd64", OSVersion: fmt.Sprintf("10.0.%d", maxTablePlatforms)})))
	if !m.of(last) {
		t.Error("the node beyond the bound was not matched from its labels")
	}
}

// TestFilterUsesInformerObjects checks that the plugin's node informer fills the table
// and that Filter answers for the informer's objects (what the scheduler's snapshot
// holds) as the labels say.
func TestFilterUsesInformerObjects(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	lister := h.factory.Core().V1().Nodes().Lister()
	h.poll(ctx, "the platform table to hold every node", func() bool {
		return len(h.pl.platforms.snapshot().ids) == len(h.nodes)
	})
	for _, img := range []string{imgMulti, imgS390X, imgWindows} {
		pod := makePod("p", img).Obj()
		state := framework.NewCycleState()
		if _, s := h.pl.PreFilter(ctx, state, pod, h.infos); !s.IsSuccess() {
			t.Fatalf("%s: PreFilter: %v", img, s)
		}
		set := h.pl.decide(pod).set
		for _, n := range h.nodes {
			node, err := lister.Get(n.Name)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := h.pl.platforms.snapshot().ids[node]; !ok {
				t.Errorf("node %s: the informer's object is not in the table", n.Name)
			}
			np, ok := platform.FromNode(node)
			want := !ok || set.MatchesNode(np)
			if got := h.pl.Filter(ctx, state, pod, nodeInfo(node)).IsSuccess(); got != want {
				t.Errorf("%s on node %s: Filter accepted = %v, want %v", img, n.Name, got, want)
			}
		}
	}
	// A relabelled node: the informer delivers a new object with the new platform.
	node, err := lister.Get(nodeS390X)
	if err != nil {
		t.Fatal(err)
	}
	node = node.DeepCopy()
	node.Labels[v1.LabelArchStable] = "arm64"
	if _, err := h.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.poll(ctx, "the relabelled node in the table", func() bool {
		current, err := lister.Get(nodeS390X)
		return err == nil && platformIn(h.pl.platforms.snapshot(), current) == "linux/arm64"
	})
}

// TestScoreUsesInformerObjects: Score answers for the informer's objects from the
// table, and the same as from the labels.
func TestScoreUsesInformerObjects(t *testing.T) {
	ctx := testContext(t)
	args := defaultArgs(t)
	args.PreferredPlatforms = []config.PlatformPreference{{Platform: "linux/arm64", Weight: 80}, {Platform: "linux/amd64", Weight: 20}}
	h := newHarness(t, ctx, harnessConfig{args: args})
	lister := h.factory.Core().V1().Nodes().Lister()
	h.poll(ctx, "the platform table to hold every node", func() bool {
		return len(h.pl.platforms.snapshot().ids) == len(h.nodes)
	})
	pod := makePod("p", imgEverywhere).Obj()
	state := framework.NewCycleState()
	if s := h.pl.PreScore(ctx, state, pod, h.infos); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	want := map[string]int64{nodeAMD64: 20, nodeARM64: 80, nodeBetaARM64: 80, nodeS390X: 0, nodeWindows: 0, nodeNoPlatform: 0}
	for _, n := range h.nodes {
		fromInformer, err := lister.Get(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		for what, node := range map[string]*v1.Node{"informer object": fromInformer, "other object": n} {
			got, s := h.pl.Score(ctx, state, pod, nodeInfo(node))
			if !s.IsSuccess() || got != want[n.Name] {
				t.Errorf("Score(%s, %s) = %d, %v; want %d", n.Name, what, got, s, want[n.Name])
			}
		}
	}
}

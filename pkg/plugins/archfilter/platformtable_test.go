package archfilter

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/archfilter/archfilter/apis/annotations"
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
		set := h.pl.settings.Decide(pod, h.pl.lookupFor(pod)).Platforms
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

// TestFilterGivesOneReasonPerCycle: a node of a platform the table knows is rejected with
// the cycle's one reason, whatever excludes its platform (another image, the pod's
// own constraints, the platforms annotation), so that the scheduler's
// FailedScheduling counts every rejected node in one clause; what excludes each
// platform is in an event (explain_test.go). A pod whose images share no platform
// is rejected by PreFilter, naming the image that empties the intersection.
func TestFilterGivesOneReasonPerCycle(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	lister := h.factory.Core().V1().Nodes().Lister()
	arm64Selector := makePod("selector", imgMulti).NodeSelector(map[string]string{v1.LabelArchStable: "arm64"}).Obj()
	declared := makePod("declared", "registry.example.com/team/not-in-any-registry:1").Annotation(annotations.Platforms, "linux/arm64").Obj()
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string // node name to Filter's message; "" accepts
	}{
		{
			// Before, each node platform had a message of its own: the second
			// container excludes arm64, the first s390x and Windows.
			name: "containers exclude different platforms",
			pod:  makePod("p", imgMulti, imgAMD64).Obj(),
			want: map[string]string{
				nodeAMD64:   "",
				nodeARM64:   mismatch("linux/amd64"),
				nodeS390X:   mismatch("linux/amd64"),
				nodeWindows: mismatch("linux/amd64"),
			},
		},
		{
			name: "the pod's own nodeSelector",
			pod:  arm64Selector,
			want: map[string]string{
				nodeARM64: "",
				nodeAMD64: mismatch("linux/arm64"),
				nodeS390X: mismatch("linux/arm64"),
			},
		},
		{
			name: "the platforms annotation",
			pod:  declared,
			want: map[string]string{
				nodeARM64: "",
				nodeAMD64: mismatch("linux/arm64"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := framework.NewCycleState()
			if _, s := h.pl.PreFilter(ctx, state, tc.pod, h.infos); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			for name, want := range tc.want {
				node, err := lister.Get(name)
				if err != nil {
					t.Fatal(err)
				}
				if got := h.pl.Filter(ctx, state, tc.pod, nodeInfo(node)).Message(); got != want {
					t.Errorf("node %s: Filter says %q, want %q", name, got, want)
				}
			}
		})
	}

	_, s := h.pl.PreFilter(ctx, framework.NewCycleState(), makePod("p", imgMulti, imgS390X).Obj(), h.infos)
	want := ReasonNoCommonPlatform + `: container "con1" (` + imgS390X + `) runs on none of linux/amd64,linux/arm64, the platforms of the images before it`
	if s.Code() != fwk.UnschedulableAndUnresolvable || s.Message() != want {
		t.Errorf("PreFilter of images sharing no platform: %v %q, want %q", s.Code(), s.Message(), want)
	}
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

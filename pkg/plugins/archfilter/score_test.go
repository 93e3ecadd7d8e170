package archfilter

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
)

// scoreCycle drives PreFilter, Filter, PreScore, Score and NormalizeScore as
// the framework does, and returns PreScore's status and the normalised score
// of every feasible node.
func (h *harness) scoreCycle(ctx context.Context, pod *v1.Pod) (statusResult, map[string]int64) {
	h.t.Helper()
	state, pfr, status := h.preFilter(ctx, pod)
	if !status.IsSuccess() && status.Code() != fwk.Skip {
		h.t.Fatalf("PreFilter: %v", status)
	}
	var feasible []fwk.NodeInfo
	for _, ni := range h.infos {
		if !pfr.AllNodes() && !pfr.NodeNames.Has(ni.Node().Name) {
			continue
		}
		if status.Code() != fwk.Skip {
			if s := h.filter(ctx, state, pod, ni.Node()); !s.IsSuccess() {
				continue
			}
		}
		feasible = append(feasible, ni)
	}
	var preScore *fwk.Status
	h.res.deny("PreScore", func() { preScore = h.pl.PreScore(ctx, state, pod, feasible) })
	if !preScore.IsSuccess() {
		return statusOf(preScore), nil
	}
	scores := make(fwk.NodeScoreList, 0, len(feasible))
	h.res.deny("Score", func() {
		for _, ni := range feasible {
			s, st := h.pl.Score(ctx, state, pod, ni)
			if !st.IsSuccess() {
				h.t.Fatalf("Score(%s): %v", ni.Node().Name, st)
			}
			scores = append(scores, fwk.NodeScore{Name: ni.Node().Name, Score: s})
		}
		if st := h.pl.ScoreExtensions().NormalizeScore(ctx, state, pod, scores); !st.IsSuccess() {
			h.t.Fatalf("NormalizeScore: %v", st)
		}
	})
	out := map[string]int64{}
	for _, s := range scores {
		if s.Score < 0 || s.Score > fwk.MaxNodeScore {
			h.t.Errorf("normalised score of %s is %d, outside [0, %d]", s.Name, s.Score, fwk.MaxNodeScore)
		}
		out[s.Name] = s.Score
	}
	return statusOf(preScore), out
}

func TestScore(t *testing.T) {
	configured := []config.PlatformPreference{{Platform: "linux/arm64", Weight: 80}, {Platform: "linux/amd64", Weight: 20}}
	tests := []struct {
		name         string
		preferences  []config.PlatformPreference
		run32Bit     []string
		nodes        []*v1.Node // nil: testNodes()
		pod          *v1.Pod
		wantPreScore statusResult
		wantScores   map[string]int64
		wantEvents   []string
	}{
		{
			name:         "configured preferredPlatforms, normalised to MaxNodeScore",
			preferences:  configured,
			pod:          makePod("p", imgEverywhere).Obj(),
			wantPreScore: success,
			wantScores: map[string]int64{
				nodeAMD64: 25, nodeARM64: 100, nodeBetaARM64: 100, nodeS390X: 0, nodeWindows: 0, nodeNoPlatform: 0,
			},
		},
		{
			name:         "only feasible nodes are scored",
			preferences:  configured,
			pod:          makePod("p", imgMulti).Obj(),
			wantPreScore: success,
			wantScores:   map[string]int64{nodeAMD64: 25, nodeARM64: 100, nodeBetaARM64: 100, nodeNoPlatform: 0},
		},
		{
			name:         "per-pod annotation overrides the configuration",
			preferences:  configured,
			pod:          makePod("p", imgEverywhere).Annotation(annotations.PreferredPlatforms, "linux/arm64=100,linux/amd64=10").Obj(),
			wantPreScore: success,
			wantScores: map[string]int64{
				nodeAMD64: 10, nodeARM64: 100, nodeBetaARM64: 100, nodeS390X: 0, nodeWindows: 0, nodeNoPlatform: 0,
			},
		},
		{
			name:         "per-pod annotation without configured preferences",
			pod:          makePod("p", imgEverywhere).Annotation(annotations.PreferredPlatforms, " windows/amd64 = 40 , linux/s390x=20").Obj(),
			wantPreScore: success,
			wantScores: map[string]int64{
				nodeAMD64: 0, nodeARM64: 0, nodeBetaARM64: 0, nodeS390X: 50, nodeWindows: 100, nodeNoPlatform: 0,
			},
		},
		{
			name:         "invalid annotation falls back to the configuration, with an event",
			preferences:  configured,
			pod:          makePod("p", imgEverywhere).Annotation(annotations.PreferredPlatforms, "linux/arm64=high").Obj(),
			wantPreScore: success,
			wantScores: map[string]int64{
				nodeAMD64: 25, nodeARM64: 100, nodeBetaARM64: 100, nodeS390X: 0, nodeWindows: 0, nodeNoPlatform: 0,
			},
			wantEvents: []string{`Warning ` + EventInvalidPreference + ` Ignoring annotation ` + annotations.PreferredPlatforms + `: "linux/arm64=high": weight must be a whole number from 1 to 100`},
		},
		{
			name:         "invalid annotation (weight out of range) and nothing configured: Skip",
			pod:          makePod("p", imgEverywhere).Annotation(annotations.PreferredPlatforms, "linux/arm64=101").Obj(),
			wantPreScore: skip,
			wantEvents:   []string{`Warning ` + EventInvalidPreference + ` Ignoring annotation ` + annotations.PreferredPlatforms + `: "linux/arm64=101": weight must be a whole number from 1 to 100`},
		},
		{
			name:         "invalid annotation (bad platform)",
			preferences:  configured,
			pod:          makePod("p", imgEverywhere).Annotation(annotations.PreferredPlatforms, "arm64=10").Obj(),
			wantPreScore: success,
			wantScores: map[string]int64{
				nodeAMD64: 25, nodeARM64: 100, nodeBetaARM64: 100, nodeS390X: 0, nodeWindows: 0, nodeNoPlatform: 0,
			},
			wantEvents: []string{`Warning ` + EventInvalidPreference + ` Ignoring annotation ` + annotations.PreferredPlatforms + `: invalid platform "arm64": want os/arch[/variant]`},
		},
		// containerd runs arm/v5-v8 images on arm64 hosts (github.com/containerd/platforms,
		// compare.go); with run32BitImagesOn Filter admits arm64 nodes for an arm/v7-only
		// pod, and Score rates them as what they are, arm64 nodes: preferences name node
		// platforms, and a node reports no arm variant to match linux/arm/v7 against.
		{
			name:         "run32BitImagesOn: a node admitted by the 32-bit rule scores as its own platform",
			preferences:  configured,
			run32Bit:     []string{"arm64"},
			pod:          makePod("p", imgNewMain).Annotation(annotations.Platforms, "linux/arm/v7").Obj(),
			wantPreScore: success,
			wantScores:   map[string]int64{nodeARM64: 100, nodeBetaARM64: 100, nodeNoPlatform: 0},
		},
		{
			name:         "run32BitImagesOn: a linux/arm/v7 preference does not rate arm64 nodes",
			run32Bit:     []string{"arm64"},
			pod:          makePod("p", imgNewMain).Annotation(annotations.Platforms, "linux/arm/v7").Annotation(annotations.PreferredPlatforms, "linux/arm/v7=100,linux/arm64=50").Obj(),
			wantPreScore: success,
			wantScores:   map[string]int64{nodeARM64: 50, nodeBetaARM64: 50, nodeNoPlatform: 0},
		},
		{
			name:         "no preferences: Skip",
			pod:          makePod("p", imgEverywhere).Obj(),
			wantPreScore: skip,
		},
		{
			name:         "preferences no node platform matches: Skip",
			pod:          makePod("p", imgEverywhere).Annotation(annotations.PreferredPlatforms, "linux/riscv64=50").Obj(),
			wantPreScore: skip,
		},
		{
			name:         "preferences every node platform matches alike: Skip",
			nodes:        []*v1.Node{linuxNode(nodeAMD64, "amd64"), linuxNode(nodeARM64, "arm64")},
			pod:          makePod("p", imgEverywhere).Annotation(annotations.PreferredPlatforms, "linux/arm64=50,linux/amd64=50").Obj(),
			wantPreScore: skip,
		},
		{
			name:         "preferences that tell the nodes apart are scored",
			nodes:        []*v1.Node{linuxNode(nodeAMD64, "amd64"), linuxNode(nodeARM64, "arm64")},
			pod:          makePod("p", imgEverywhere).Annotation(annotations.PreferredPlatforms, "linux/arm64=50,linux/amd64=40").Obj(),
			wantPreScore: success,
			wantScores:   map[string]int64{nodeAMD64: 80, nodeARM64: 100},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			args := defaultArgs(t)
			args.PreferredPlatforms = tc.preferences
			args.Run32BitImagesOn = tc.run32Bit
			h := newHarness(t, ctx, harnessConfig{args: args, nodes: tc.nodes})
			gotPreScore, gotScores := h.scoreCycle(ctx, tc.pod)
			if diff := cmp.Diff(tc.wantPreScore, gotPreScore); diff != "" {
				t.Errorf("PreScore (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantScores, gotScores); diff != "" {
				t.Errorf("normalised scores (-want,+got):\n%s", diff)
			}
			// PreFilter's ImagePlatformsResolved: TestPreFilterExplainsExclusionsOnce.
			if diff := cmp.Diff(tc.wantEvents, withoutReason(h.events(), EventResolved)); diff != "" {
				t.Errorf("events (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestPreScoreOutOfScope: archfilter.io/skip "opts a pod out of ArchFilter
// entirely", and namespaceSelector "limits ArchFilter to pods in matching
// namespaces"; the configured preferences must not steer such pods either.
func TestPreScoreOutOfScope(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
	}{
		{name: "skip annotation", pod: makePod("p", imgEverywhere).Namespace("selected").Annotation(annotations.Skip, "true").Obj()},
		{name: "namespace not selected", pod: makePod("p", imgEverywhere).Namespace("other").Obj()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			args := defaultArgs(t)
			args.PreferredPlatforms = []config.PlatformPreference{{Platform: "linux/arm64", Weight: 100}}
			args.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"archfilter.io/enabled": "true"}}
			h := newHarness(t, ctx, harnessConfig{args: args, objects: []runtime.Object{
				namespace("selected", map[string]string{"archfilter.io/enabled": "true"}),
				namespace("other", nil),
			}})
			h.poll(ctx, "namespaces in the informer", func() bool {
				_, err := h.pl.scope.namespaces.Get("other")
				return err == nil
			})
			got, scores := h.scoreCycle(ctx, tc.pod)
			if diff := cmp.Diff(skip, got); diff != "" {
				t.Errorf("PreScore for a pod out of ArchFilter's scope (-want,+got):\n%s\nscores: %v", diff, scores)
			}
		})
	}
}

// TestScoreWithoutPreScoreState: a missing or foreign entry under PreScore's
// key is an Error status from Score and NormalizeScore, not a panic.
func TestScoreWithoutPreScoreState(t *testing.T) {
	tests := []struct {
		name  string
		state func() fwk.CycleState
	}{
		{name: "no entry", state: func() fwk.CycleState { return framework.NewCycleState() }},
		{name: "another type under the key", state: func() fwk.CycleState {
			s := framework.NewCycleState()
			s.Write(preScoreStateKey, &preFilterState{})
			return s
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			h := newHarness(t, ctx, harnessConfig{})
			pod := makePod("p", imgMulti).Obj()
			if _, s := h.pl.Score(ctx, tc.state(), pod, h.infos[0]); s.Code() != fwk.Error {
				t.Errorf("Score: %v, want Error", s)
			}
			if s := h.pl.NormalizeScore(ctx, tc.state(), pod, fwk.NodeScoreList{{Name: nodeAMD64, Score: 1}}); s.Code() != fwk.Error {
				t.Errorf("NormalizeScore: %v, want Error", s)
			}
		})
	}
}

package archfilter

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

func result(names ...string) *fwk.PreFilterResult {
	return &fwk.PreFilterResult{NodeNames: sets.New(names...)}
}

var skip = statusResult{Code: fwk.Skip}

func mismatch(set string) string {
	return ReasonPlatformMismatch + " (" + set + ")"
}

func invalidAnnotation(t *testing.T, value string) string {
	_, err := platform.ParseList(value)
	if err == nil {
		t.Fatalf("annotation %q parses", value)
	}
	return fmt.Sprintf("%s: annotation %s: %v", ReasonInvalidAnnotation, annotations.Platforms, err)
}

func TestPreFilter(t *testing.T) {
	twoTerms := &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{
			{MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelArchStable, Operator: v1.NodeSelectorOpIn, Values: []string{"arm64"}}}},
			{MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: []string{"zone-a"}}}},
		},
	}}
	tests := []struct {
		name  string
		args  func(*config.ArchFilterArgs)
		nodes []*v1.Node // nil: testNodes()
		pod   *v1.Pod
		// wantResult and wantStatus are PreFilter's answer.
		wantResult *fwk.PreFilterResult
		wantStatus statusResult
		// wantSet is the set in the cycle state ("" when none is written).
		wantSet string
		// wantFeasible are the nodes that pass PreFilterResult and Filter,
		// when PreFilter lets the cycle go on to Filter.
		wantFeasible []string
		// wantEvents are the recorded events, but ImagePlatformsResolved.
		wantEvents []string
		// wantNoLookup: the resolver cache is not read at all.
		wantNoLookup bool
	}{
		{
			name:         "multi-arch image, most nodes match: Filter runs on all nodes",
			pod:          makePod("p", imgMulti).Obj(),
			wantStatus:   success,
			wantSet:      "linux/amd64,linux/arm64",
			wantFeasible: []string{nodeAMD64, nodeARM64, nodeBetaARM64, nodeNoPlatform},
		},
		{
			name:         "images intersect to arm64: PreFilterResult of the minority",
			pod:          makePod("p", imgMulti, imgARM64).Obj(),
			wantResult:   result(nodeARM64, nodeBetaARM64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/arm64",
			wantFeasible: []string{nodeARM64, nodeBetaARM64, nodeNoPlatform},
		},
		{
			name:         "amd64-only image",
			pod:          makePod("p", imgAMD64).Obj(),
			wantResult:   result(nodeAMD64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/amd64",
			wantFeasible: []string{nodeAMD64, nodeNoPlatform},
		},
		{
			name:         "arm64-only image matches the beta-labelled node",
			pod:          makePod("p", imgARM64).Obj(),
			wantResult:   result(nodeARM64, nodeBetaARM64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/arm64",
			wantFeasible: []string{nodeARM64, nodeBetaARM64, nodeNoPlatform},
		},
		{
			name:         "windows-only image of the node's build",
			pod:          makePod("p", imgWindows).Obj(),
			wantResult:   result(nodeWindows, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "windows/amd64",
			wantFeasible: []string{nodeNoPlatform, nodeWindows},
		},
		{
			name:         "windows image of another build: the index keeps the node, Filter rejects it",
			pod:          makePod("p", imgWin2022).Obj(),
			wantResult:   result(nodeWindows, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "windows/amd64",
			wantFeasible: []string{nodeNoPlatform},
		},
		{
			// Filter would accept every node of the table: it is skipped, and
			// Reserve checks the chosen node (reserve_test.go).
			name:       "image runs on every node's platform: Skip",
			pod:        makePod("p", imgEverywhere).Obj(),
			wantStatus: skip,
			wantSet:    "linux/amd64,linux/arm64,linux/s390x,windows/amd64",
		},
		{
			name:       "data-only image does not constrain: Skip",
			pod:        makePod("p", imgData).Obj(),
			wantStatus: skip,
		},
		{
			name:         "data-only image beside an amd64 one",
			pod:          makePod("p", imgData, imgAMD64).Obj(),
			wantResult:   result(nodeAMD64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/amd64",
			wantFeasible: []string{nodeAMD64, nodeNoPlatform},
		},
		{
			name:       "images with no common platform",
			pod:        makePod("p", imgAMD64, imgARM64).Obj(),
			wantStatus: want(fwk.UnschedulableAndUnresolvable, ReasonNoCommonPlatform+`: container "con1" (`+imgARM64+`) runs on none of linux/amd64, the platforms of the images before it`),
		},
		{
			name:       "no node of the platform (riscv64)",
			nodes:      withoutNode(testNodes(), nodeNoPlatform),
			pod:        makePod("p", imgRISCV).Obj(),
			wantStatus: success,
			wantSet:    "linux/riscv64",
			// No narrowing to nothing: Filter rejects each node with the reason.
			wantFeasible: []string{},
		},
		{
			name:         "no node of the platform (riscv64) but a node that reports none",
			pod:          makePod("p", imgRISCV).Obj(),
			wantResult:   result(nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/riscv64",
			wantFeasible: []string{nodeNoPlatform},
		},
		{
			name:       "resolution failed, failurePolicy Ignore: no constraint",
			pod:        makePod("p", imgFailed).Obj(),
			wantStatus: skip,
			wantEvents: []string{"Warning " + EventFailOpen + " Scheduling without an architecture constraint (failurePolicy Ignore): " + failedImageErr.Error()},
		},
		{
			name:         "resolution failed beside a known image, failurePolicy Ignore: the known image constrains",
			pod:          makePod("p", imgFailed, imgARM64).Obj(),
			wantResult:   result(nodeARM64, nodeBetaARM64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/arm64",
			wantEvents:   []string{"Warning " + EventFailOpen + " Scheduling on linux/arm64 (failurePolicy Ignore): " + failedImageErr.Error()},
			wantFeasible: []string{nodeARM64, nodeBetaARM64, nodeNoPlatform},
		},
		// containerd runs arm/v5-v8 images on arm64 hosts (github.com/containerd/platforms,
		// compare.go); archfilter follows only when run32BitImagesOn says the nodes can.
		{
			name:         "arm/v7-only image, run32BitImagesOn arm64: arm64 nodes",
			args:         func(a *config.ArchFilterArgs) { a.Run32BitImagesOn = []string{"arm64"} },
			pod:          makePod("p", imgNewMain).Annotation(annotations.Platforms, "linux/arm/v7").Obj(),
			wantResult:   result(nodeARM64, nodeBetaARM64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/arm/v7,linux/arm64",
			wantFeasible: []string{nodeARM64, nodeBetaARM64, nodeNoPlatform},
		},
		{
			name:         "arm/v7-only image, run32BitImagesOn unset: no arm64 node",
			pod:          makePod("p", imgNewMain).Annotation(annotations.Platforms, "linux/arm/v7").Obj(),
			wantResult:   result(nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/arm/v7",
			wantFeasible: []string{nodeNoPlatform},
		},
		{
			name:         "arm/v7 image with an arm64 image, run32BitImagesOn arm64: arm64 nodes",
			args:         func(a *config.ArchFilterArgs) { a.Run32BitImagesOn = []string{"arm64"} },
			pod:          makePod("p", imgARMv7, imgARM64).Obj(),
			wantResult:   result(nodeARM64, nodeBetaARM64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/arm64",
			wantFeasible: []string{nodeARM64, nodeBetaARM64, nodeNoPlatform},
		},
		{
			name:         "resolution failed, failurePolicy Ignore with fallbackPlatforms",
			args:         func(a *config.ArchFilterArgs) { a.FallbackPlatforms = []string{"linux/amd64"} },
			pod:          makePod("p", imgFailed).Obj(),
			wantResult:   result(nodeAMD64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/amd64",
			wantEvents:   []string{"Warning " + EventFailOpen + " Scheduling on linux/amd64 (failurePolicy Ignore): " + failedImageErr.Error()},
			wantFeasible: []string{nodeAMD64, nodeNoPlatform},
		},
		{
			name: "resolution failed, failurePolicy Fail",
			args: func(a *config.ArchFilterArgs) { a.FailurePolicy = config.FailurePolicyFail },
			pod:  makePod("p", imgFailed, imgAMD64).Obj(),
			wantStatus: want(fwk.UnschedulableAndUnresolvable,
				ReasonResolutionFailed+`: resolving image "registry.example.com/team/private:1" on registry registry.example.com with secret default/regcred credentials: Unauthorized (HTTP 401): authentication required`),
			wantEvents: []string{"Warning " + EventResolutionFailed + " " + failedImageErr.Error()},
		},
		{
			name:         "declared annotation: no registry, no cache",
			pod:          makePod("p", imgNewMain).Annotation(annotations.Platforms, "linux/s390x").Obj(),
			wantResult:   result(nodeNoPlatform, nodeS390X),
			wantStatus:   success,
			wantSet:      "linux/s390x",
			wantFeasible: []string{nodeNoPlatform, nodeS390X},
			wantNoLookup: true,
		},
		{
			name:         "declared annotation narrows a multi-arch image",
			pod:          makePod("p", imgMulti).Annotation(annotations.Platforms, "linux/arm64").Obj(),
			wantResult:   result(nodeARM64, nodeBetaARM64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/arm64",
			wantFeasible: []string{nodeARM64, nodeBetaARM64, nodeNoPlatform},
			wantNoLookup: true,
		},
		{
			name:         "declared annotation *: Skip",
			pod:          makePod("p", imgAMD64).Annotation(annotations.Platforms, "*").Obj(),
			wantStatus:   skip,
			wantNoLookup: true,
		},
		{
			name:       "invalid declared annotation",
			pod:        makePod("p", imgAMD64).Annotation(annotations.Platforms, "arm64").Obj(),
			wantStatus: want(fwk.UnschedulableAndUnresolvable, invalidAnnotation(t, "arm64")),
		},
		{
			name:       "invalid declared annotation: empty element",
			pod:        makePod("p", imgAMD64).Annotation(annotations.Platforms, "linux/amd64,,linux/arm64").Obj(),
			wantStatus: want(fwk.UnschedulableAndUnresolvable, invalidAnnotation(t, "linux/amd64,,linux/arm64")),
		},
		{
			name:         "own nodeSelector narrows the set",
			pod:          makePod("p", imgMulti).NodeSelector(map[string]string{v1.LabelArchStable: "arm64"}).Obj(),
			wantResult:   result(nodeARM64, nodeBetaARM64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/arm64",
			wantFeasible: []string{nodeARM64, nodeBetaARM64, nodeNoPlatform},
		},
		{
			name:         "own beta nodeSelector narrows the set",
			pod:          makePod("p", imgMulti).NodeSelector(map[string]string{"beta.kubernetes.io/arch": "amd64"}).Obj(),
			wantResult:   result(nodeAMD64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/amd64",
			wantFeasible: []string{nodeAMD64, nodeNoPlatform},
		},
		{
			name:         "own required node affinity narrows the set",
			pod:          makePod("p", imgMulti).NodeAffinityIn(v1.LabelArchStable, []string{"amd64", "s390x"}, st.NodeSelectorTypeMatchExpressions).Obj(),
			wantResult:   result(nodeAMD64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/amd64",
			wantFeasible: []string{nodeAMD64, nodeNoPlatform},
		},
		{
			name: "nodeSelector and affinity together",
			pod: makePod("p", imgEverywhere).NodeSelector(map[string]string{v1.LabelArchStable: "arm64"}).
				NodeAffinityIn(v1.LabelArchStable, []string{"amd64", "arm64"}, st.NodeSelectorTypeMatchExpressions).Obj(),
			wantResult:   result(nodeARM64, nodeBetaARM64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/arm64",
			wantFeasible: []string{nodeARM64, nodeBetaARM64, nodeNoPlatform},
		},
		{
			name: "nodeSelector and affinity exclude each other",
			pod: makePod("p", imgEverywhere).NodeSelector(map[string]string{v1.LabelArchStable: "arm64"}).
				NodeAffinityIn(v1.LabelArchStable, []string{"amd64"}, st.NodeSelectorTypeMatchExpressions).Obj(),
			wantStatus: want(fwk.UnschedulableAndUnresolvable, ReasonOwnConstraintConflict+" (linux/amd64,linux/arm64,linux/s390x,windows/amd64)"),
		},
		{
			name:         "affinity terms are ORed: a term without arch allows every arch",
			pod:          makePod("p", imgMulti).NodeAffinity(twoTerms).Obj(),
			wantStatus:   success,
			wantSet:      "linux/amd64,linux/arm64",
			wantFeasible: []string{nodeAMD64, nodeARM64, nodeBetaARM64, nodeNoPlatform},
		},
		{
			name:         "NotIn affinity does not narrow (NodeAffinity enforces it)",
			pod:          makePod("p", imgMulti).NodeAffinityNotIn(v1.LabelArchStable, []string{"amd64"}).Obj(),
			wantStatus:   success,
			wantSet:      "linux/amd64,linux/arm64",
			wantFeasible: []string{nodeAMD64, nodeARM64, nodeBetaARM64, nodeNoPlatform},
		},
		{
			name:         "spec.os narrows the set",
			pod:          withOS(makePod("p", imgEverywhere).Obj(), v1.Windows),
			wantResult:   result(nodeWindows, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "windows/amd64",
			wantFeasible: []string{nodeNoPlatform, nodeWindows},
		},
		{
			name:       "spec.os conflicts with the images",
			pod:        withOS(makePod("p", imgMulti).Obj(), v1.Windows),
			wantStatus: want(fwk.UnschedulableAndUnresolvable, ReasonOwnConstraintConflict+" (linux/amd64,linux/arm64)"),
		},
		{
			name:       "nodeSelector conflicts with the images",
			pod:        makePod("p", imgAMD64).NodeSelector(map[string]string{v1.LabelArchStable: "s390x"}).Obj(),
			wantStatus: want(fwk.UnschedulableAndUnresolvable, ReasonOwnConstraintConflict+" (linux/amd64)"),
		},
		{
			name:       "required affinity conflicts with the images",
			pod:        makePod("p", imgARM64).NodeAffinityIn(v1.LabelArchStable, []string{"amd64"}, st.NodeSelectorTypeMatchExpressions).Obj(),
			wantStatus: want(fwk.UnschedulableAndUnresolvable, ReasonOwnConstraintConflict+" (linux/arm64)"),
		},
		{
			name:         "skip annotation",
			pod:          makePod("p", imgAMD64).Annotation(annotations.Skip, "true").Obj(),
			wantStatus:   skip,
			wantNoLookup: true,
		},
		{
			name:         "excluded namespace",
			pod:          makePod("p", imgAMD64).Namespace("kube-public").Obj(),
			wantStatus:   skip,
			wantNoLookup: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			args := defaultArgs(t)
			if tc.args != nil {
				tc.args(args)
			}
			h := newHarness(t, ctx, harnessConfig{args: args, nodes: tc.nodes})
			// The framework runs PreEnqueue first; every image here is cached
			// or declared, so it admits the pod without starting anything.
			if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, tc.pod))); diff != "" {
				t.Fatalf("PreEnqueue (-want,+got):\n%s", diff)
			}
			lookups := h.res.lookupCount()
			state, gotResult, gotStatus := h.preFilter(ctx, tc.pod)
			if diff := cmp.Diff(tc.wantStatus, statusOf(gotStatus)); diff != "" {
				t.Errorf("PreFilter status (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantResult, gotResult); diff != "" {
				t.Errorf("PreFilterResult (-want,+got):\n%s", diff)
			}
			gotSet := ""
			if s, err := readState(state); err == nil {
				gotSet = s.set.String()
			}
			if diff := cmp.Diff(tc.wantSet, gotSet); diff != "" {
				t.Errorf("cycle state set (-want,+got):\n%s", diff)
			}
			if tc.wantNoLookup && h.res.lookupCount() != lookups {
				t.Errorf("PreFilter read the resolver cache %d times, want 0", h.res.lookupCount()-lookups)
			}
			// What excludes each node platform: TestPreFilterExplainsExclusionsOnce.
			if diff := cmp.Diff(tc.wantEvents, withoutReason(h.events(), EventResolved)); diff != "" {
				t.Errorf("events (-want,+got):\n%s", diff)
			}
			if gotStatus.IsSuccess() {
				if diff := cmp.Diff(sorted(tc.wantFeasible...), h.feasible(ctx, state, tc.pod, gotResult)); diff != "" {
					t.Errorf("feasible nodes (-want,+got):\n%s", diff)
				}
			} else if tc.wantFeasible != nil {
				t.Errorf("PreFilter returned %v, want feasible nodes %v", gotStatus, tc.wantFeasible)
			}
			if got := h.res.asyncCalls(); len(got) != 0 {
				t.Errorf("ResolveAsync called: %v", got)
			}
		})
	}
}

func withoutNode(nodes []*v1.Node, name string) []*v1.Node {
	var out []*v1.Node
	for _, n := range nodes {
		if n.Name != name {
			out = append(out, n)
		}
	}
	return out
}

func withOS(pod *v1.Pod, os v1.OSName) *v1.Pod {
	pod.Spec.OS = &v1.PodOS{Name: os}
	return pod
}

// TestPreFilterSnapshotAheadOfIndex: the node index and platform table are fed by
// their own informer listener and can lag the scheduler's snapshot. PreFilter may
// skip Filter on the table's word, but the pod must still land only on a node of
// its platform: Reserve checks the chosen node in the snapshot.
func TestPreFilterSnapshotAheadOfIndex(t *testing.T) {
	tests := []struct {
		name     string
		indexed  []*v1.Node
		snapshot []*v1.Node
		wantSkip bool
	}{
		{
			name:     "index empty (handlers not caught up at start-up): no Skip",
			indexed:  []*v1.Node{},
			snapshot: testNodes(),
		},
		{
			name:     "index has only the amd64 node",
			indexed:  []*v1.Node{linuxNode(nodeAMD64, "amd64")},
			snapshot: testNodes(),
			wantSkip: true,
		},
		{
			name:     "same node count, different nodes: an amd64 node deleted and an arm64 node added",
			indexed:  []*v1.Node{linuxNode(nodeAMD64, "amd64"), linuxNode("amd64-scaled-down", "amd64")},
			snapshot: []*v1.Node{linuxNode(nodeAMD64, "amd64"), linuxNode("arm64-scaled-up", "arm64")},
			wantSkip: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			h := newHarness(t, ctx, harnessConfig{nodes: tc.indexed, snapshot: tc.snapshot})
			h.nodes = tc.snapshot
			h.infos = nodeInfos(h.nodes)
			pod := makePod("p", imgAMD64).Obj()
			placeable, skipped := h.placeable(ctx, pod)
			if skipped != tc.wantSkip {
				t.Errorf("PreFilter skipped Filter: %v, want %v", skipped, tc.wantSkip)
			}
			for _, n := range placeable {
				if n != nodeAMD64 && n != nodeNoPlatform {
					t.Errorf("amd64-only pod placeable on %s", n)
				}
			}
			if !slices.Contains(placeable, nodeAMD64) {
				t.Errorf("amd64-only pod not placeable on %s: %v", nodeAMD64, placeable)
			}
		})
	}
}

func TestPreFilterPendingAfterMaxWait(t *testing.T) {
	tests := []struct {
		name       string
		policy     config.FailurePolicy
		pod        *v1.Pod
		wantResult *fwk.PreFilterResult
		wantStatus statusResult
		wantSet    string
		// wantFailOpen: a person can see that the pod was placed with images
		// of unknown platform.
		wantFailOpen bool
	}{
		{
			name:         "Ignore: scheduled without a constraint",
			policy:       config.FailurePolicyIgnore,
			pod:          makePod("p", imgNewMain).Obj(),
			wantStatus:   skip,
			wantFailOpen: true,
		},
		{
			name:         "Ignore: the known image still constrains",
			policy:       config.FailurePolicyIgnore,
			pod:          makePod("p", imgNewMain, imgAMD64).Obj(),
			wantResult:   result(nodeAMD64, nodeNoPlatform),
			wantStatus:   success,
			wantSet:      "linux/amd64",
			wantFailOpen: true,
		},
		{
			name:       "Fail: unschedulable, naming the image",
			policy:     config.FailurePolicyFail,
			pod:        makePod("p", imgNewMain, imgAMD64).Obj(),
			wantStatus: want(fwk.UnschedulableAndUnresolvable, ReasonResolutionFailed+": still resolving "+imgNewMain),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			args := defaultArgs(t)
			args.FailurePolicy = tc.policy
			h := newHarness(t, ctx, harnessConfig{args: args})
			key := "default/p"

			if diff := cmp.Diff(waiting(), statusOf(h.preEnqueue(ctx, tc.pod))); diff != "" {
				t.Fatalf("PreEnqueue (-want,+got):\n%s", diff)
			}
			h.clock.Step(args.MaxWait.Duration)
			if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, tc.pod))); diff != "" {
				t.Fatalf("PreEnqueue after maxWait (-want,+got):\n%s", diff)
			}
			h.events()
			activations := h.act.activations(key)

			state, gotResult, gotStatus := h.preFilter(ctx, tc.pod)
			if diff := cmp.Diff(tc.wantStatus, statusOf(gotStatus)); diff != "" {
				t.Errorf("PreFilter status (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantResult, gotResult); diff != "" {
				t.Errorf("PreFilterResult (-want,+got):\n%s", diff)
			}
			gotSet := ""
			if s, err := readState(state); err == nil {
				gotSet = s.set.String()
			}
			if diff := cmp.Diff(tc.wantSet, gotSet); diff != "" {
				t.Errorf("cycle state set (-want,+got):\n%s", diff)
			}
			if got := withReason(h.events(), EventFailOpen); tc.wantFailOpen && len(got) == 0 {
				t.Errorf("no %s event: a pod whose image %s is still unresolved was scheduled without (part of) its constraint", EventFailOpen, imgNewMain)
			}

			// The late answer still activates the pod, which PreEnqueue
			// now admits with everything cached.
			h.res.complete(imgNewMain, resolver.Result{Platforms: mustSet(t, "linux/amd64")})
			if got := h.act.activations(key) - activations; got != 1 {
				t.Errorf("late resolution activated the pod %d times, want 1", got)
			}
			if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, tc.pod))); diff != "" {
				t.Errorf("PreEnqueue after the late answer (-want,+got):\n%s", diff)
			}
			_, gotResult, gotStatus = h.preFilter(ctx, tc.pod)
			if diff := cmp.Diff(success, statusOf(gotStatus)); diff != "" {
				t.Errorf("PreFilter after the late answer (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(result(nodeAMD64, nodeNoPlatform), gotResult); diff != "" {
				t.Errorf("PreFilterResult after the late answer (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPreFilterFailRetriesWhenFailureExpires(t *testing.T) {
	ctx := testContext(t)
	args := defaultArgs(t)
	args.FailurePolicy = config.FailurePolicyFail
	h := newHarness(t, ctx, harnessConfig{args: args})
	pod := makePod("p", imgFailed).Obj()
	key := "default/p"

	if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, pod))); diff != "" {
		t.Fatalf("PreEnqueue with a cached failure (-want,+got):\n%s", diff)
	}
	for i := range 2 {
		_, _, status := h.preFilter(ctx, pod)
		if status.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(status.Message(), ReasonResolutionFailed) {
			t.Fatalf("PreFilter %d: %v, want %s", i, status, ReasonResolutionFailed)
		}
		for _, part := range []string{imgFailed, "registry.example.com", "secret default/regcred", "HTTP 401", string(resolver.ReasonUnauthorized)} {
			if !strings.Contains(status.Message(), part) {
				t.Errorf("PreFilter message %q does not name %q", status.Message(), part)
			}
		}
	}
	h.clock.Step(failedImageTTL - time.Second)
	if got := h.act.activations(key); got != 0 {
		t.Fatalf("activated %d times before the failure expired", got)
	}
	h.clock.Step(time.Second)
	if got := h.act.activations(key); got != 1 {
		t.Fatalf("activated %d times when the failure expired, want 1 (one retry for two rejections)", got)
	}
	h.clock.Step(failedImageTTL)
	if got := h.act.activations(key); got != 1 {
		t.Errorf("activated %d times, want the retry to fire once", got)
	}

	// The retry runs PreEnqueue, which now resolves the image again.
	if diff := cmp.Diff(waiting(), statusOf(h.preEnqueue(ctx, pod))); diff != "" {
		t.Fatalf("PreEnqueue on retry (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{imgFailed}, h.res.asyncCalls()); diff != "" {
		t.Errorf("ResolveAsync calls on retry (-want,+got):\n%s", diff)
	}
	h.res.complete(imgFailed, resolver.Result{Platforms: mustSet(t, "linux/arm64")})
	if got := h.act.activations(key); got != 2 {
		t.Errorf("activated %d times after resolution, want 2", got)
	}
	if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, pod))); diff != "" {
		t.Errorf("PreEnqueue after resolution (-want,+got):\n%s", diff)
	}
	_, res, status := h.preFilter(ctx, pod)
	if diff := cmp.Diff(success, statusOf(status)); diff != "" {
		t.Errorf("PreFilter after resolution (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(result(nodeARM64, nodeBetaARM64, nodeNoPlatform), res); diff != "" {
		t.Errorf("PreFilterResult after resolution (-want,+got):\n%s", diff)
	}
}

func TestFilter(t *testing.T) {
	windowsNoBuild := makeNode("windows-no-build", map[string]string{v1.LabelOSStable: "windows", v1.LabelArchStable: "amd64"})
	statusOnlyARM64 := makeNode("status-only-arm64", nil)
	statusOnlyARM64.Status.NodeInfo = v1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "arm64"}
	mixedLabels := makeNode("stable-arch-beta-os", map[string]string{"beta.kubernetes.io/os": "linux", v1.LabelArchStable: "arm64"})
	nodes := append(testNodes(), windowsNoBuild, statusOnlyARM64, mixedLabels)

	tests := []struct {
		name string
		pod  *v1.Pod
		// want maps node name to Filter's answer.
		want map[string]statusResult
	}{
		{
			name: "arm64-only pod",
			pod:  makePod("p", imgARM64).Obj(),
			want: map[string]statusResult{
				nodeAMD64:             want(fwk.UnschedulableAndUnresolvable, "node(s) didn't match the platforms of the pod's images (linux/arm64)"),
				nodeARM64:             success,
				nodeS390X:             want(fwk.UnschedulableAndUnresolvable, "node(s) didn't match the platforms of the pod's images (linux/arm64)"),
				nodeWindows:           want(fwk.UnschedulableAndUnresolvable, "node(s) didn't match the platforms of the pod's images (linux/arm64)"),
				nodeBetaARM64:         success,
				nodeNoPlatform:        success,
				"windows-no-build":    want(fwk.UnschedulableAndUnresolvable, "node(s) didn't match the platforms of the pod's images (linux/arm64)"),
				"status-only-arm64":   success,
				"stable-arch-beta-os": success,
			},
		},
		{
			name: "amd64 + arm64 pod",
			pod:  makePod("p", imgMulti).Obj(),
			want: map[string]statusResult{
				nodeAMD64:             success,
				nodeARM64:             success,
				nodeS390X:             want(fwk.UnschedulableAndUnresolvable, mismatch("linux/amd64,linux/arm64")),
				nodeWindows:           want(fwk.UnschedulableAndUnresolvable, mismatch("linux/amd64,linux/arm64")),
				nodeBetaARM64:         success,
				nodeNoPlatform:        success,
				"windows-no-build":    want(fwk.UnschedulableAndUnresolvable, mismatch("linux/amd64,linux/arm64")),
				"status-only-arm64":   success,
				"stable-arch-beta-os": success,
			},
		},
		{
			name: "windows ltsc2019 pod",
			pod:  makePod("p", imgWindows).Obj(),
			want: map[string]statusResult{
				nodeAMD64:             want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
				nodeARM64:             want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
				nodeS390X:             want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
				nodeWindows:           success,
				nodeBetaARM64:         want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
				nodeNoPlatform:        success,
				"windows-no-build":    success,
				"status-only-arm64":   want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
				"stable-arch-beta-os": want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
			},
		},
		{
			name: "windows ltsc2022 pod: build mismatch",
			pod:  makePod("p", imgWin2022).Obj(),
			want: map[string]statusResult{
				nodeAMD64:             want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
				nodeARM64:             want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
				nodeS390X:             want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
				nodeWindows:           want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
				nodeBetaARM64:         want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
				nodeNoPlatform:        success,
				"windows-no-build":    success,
				"status-only-arm64":   want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
				"stable-arch-beta-os": want(fwk.UnschedulableAndUnresolvable, mismatch("windows/amd64")),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			h := newHarness(t, ctx, harnessConfig{nodes: nodes})
			state, _, status := h.preFilter(ctx, tc.pod)
			if !status.IsSuccess() {
				t.Fatalf("PreFilter: %v", status)
			}
			got := map[string]statusResult{}
			for _, n := range nodes {
				got[n.Name] = statusOf(h.filter(ctx, state, tc.pod, n))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Filter (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestFilterFreshStatusPerRejection(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	pod := makePod("p", imgARM64).Obj()
	state, _, _ := h.preFilter(ctx, pod)
	amd := nodeByName(t, h.nodes, nodeAMD64)
	first := h.filter(ctx, state, pod, amd)
	second := h.filter(ctx, state, pod, amd)
	if first == nil || second == nil {
		t.Fatalf("Filter accepted the amd64 node: %v, %v", first, second)
	}
	if first == second {
		t.Fatal("two rejections returned the same *Status; the framework writes into statuses")
	}
	first.SetPlugin("SomeoneElse")
	first.AppendReason("changed")
	if diff := cmp.Diff(want(fwk.UnschedulableAndUnresolvable, mismatch("linux/arm64")), statusOf(second)); diff != "" {
		t.Errorf("second status changed with the first (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(want(fwk.UnschedulableAndUnresolvable, mismatch("linux/arm64")), statusOf(h.filter(ctx, state, pod, amd))); diff != "" {
		t.Errorf("third status (-want,+got):\n%s", diff)
	}
}

func TestFilterWithoutPreFilterState(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	got := h.filter(ctx, framework.NewCycleState(), makePod("p", imgARM64).Obj(), nodeByName(t, h.nodes, nodeAMD64))
	if got.Code() != fwk.Error {
		t.Errorf("Filter without PreFilter state: %v, want an Error status", got)
	}
}

func TestFilterAcceptDoesNotAllocate(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	pod := makePod("p", imgARM64).Obj()
	state, _, status := h.preFilter(ctx, pod)
	if !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	for _, name := range []string{nodeARM64, nodeBetaARM64, nodeNoPlatform} {
		ni := nodeInfo(nodeByName(t, h.nodes, name))
		if s := h.pl.Filter(ctx, state, pod, ni); !s.IsSuccess() {
			t.Fatalf("Filter(%s): %v", name, s)
		}
		if allocs := testing.AllocsPerRun(1000, func() { h.pl.Filter(ctx, state, pod, ni) }); allocs != 0 {
			t.Errorf("Filter accepting %s allocates %.1f times per call, want 0", name, allocs)
		}
	}
}

// TestFilterOnClonedState: the framework clones the cycle state (preemption,
// nominated pods); Filter answers the same on the clone.
// TestFilterOnClonedState: preemption and nominated pods run Filter on clones
// of the cycle state; a clone must filter exactly as PreFilter decided, here
// the arm64 nodes (and the node with no platform labels) for an arm64-only
// image, and nothing else.
func TestFilterOnClonedState(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	pod := makePod("p", imgARM64).Obj()
	state, _, status := h.preFilter(ctx, pod)
	if !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	want := []string{nodeARM64, nodeBetaARM64, nodeNoPlatform}
	sort.Strings(want)
	if diff := cmp.Diff(want, h.feasible(ctx, state.Clone(), pod, nil)); diff != "" {
		t.Errorf("feasible nodes on the clone (-want,+got):\n%s", diff)
	}
}

// Filter takes the state of the cycle PreFilter last ran for from the plugin
// (filterState); the state of an earlier cycle, or a clone, must still give that
// cycle's answer, not the latest one's.
func TestFilterAcrossCycles(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	armPod, amdPod := makePod("arm", imgARM64).Obj(), makePod("amd", imgAMD64).Obj()
	armState, _, status := h.preFilter(ctx, armPod)
	if !status.IsSuccess() {
		t.Fatalf("PreFilter of the arm64 pod: %v", status)
	}
	amdState, _, status := h.preFilter(ctx, amdPod)
	if !status.IsSuccess() {
		t.Fatalf("PreFilter of the amd64 pod: %v", status)
	}
	wantARM := []string{nodeARM64, nodeBetaARM64, nodeNoPlatform}
	sort.Strings(wantARM)
	for name, state := range map[string]fwk.CycleState{"the earlier cycle's state": armState, "its clone": armState.Clone()} {
		if diff := cmp.Diff(wantARM, h.feasible(ctx, state, armPod, nil)); diff != "" {
			t.Errorf("feasible nodes for the arm64 pod on %s (-want,+got):\n%s", name, diff)
		}
	}
	for _, node := range h.feasible(ctx, amdState, amdPod, nil) {
		if node == nodeARM64 || node == nodeBetaARM64 {
			t.Errorf("the latest cycle's state admits %s, an arm64 node, for the amd64 pod", node)
		}
	}
}

func TestPodDeletedWhileRetrying(t *testing.T) {
	ctx := testContext(t)
	args := defaultArgs(t)
	args.FailurePolicy = config.FailurePolicyFail
	pod := makePod("p", imgFailed).Obj()
	h := newHarness(t, ctx, harnessConfig{args: args, objects: []runtime.Object{pod.DeepCopy()}})
	h.poll(ctx, "pod in the informer", func() bool {
		_, err := h.factory.Core().V1().Pods().Lister().Pods("default").Get("p")
		return err == nil
	})
	if _, _, s := h.preFilter(ctx, pod); s.IsSuccess() {
		t.Fatal("PreFilter admitted a pod whose resolution failed under Fail")
	}
	if err := h.client.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.poll(ctx, "the retry of the deleted pod to be dropped", func() bool {
		h.pl.held.mu.Lock()
		defer h.pl.held.mu.Unlock()
		return len(h.pl.held.retries) == 0
	})
	h.clock.Step(failedImageTTL)
	if got := h.act.activations("default/p"); got != 0 {
		t.Errorf("deleted pod activated %d times by its retry timer", got)
	}
}

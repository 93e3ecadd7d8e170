package archfilter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"

	"github.com/archfilter/archfilter/apis/annotations"
)

var (
	archTaintARM64 = v1.Taint{Key: v1.LabelArchStable, Value: "arm64", Effect: v1.TaintEffectNoSchedule}
	dedicatedTaint = v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}
)

func taintedNode(name string, labels map[string]string, taints ...v1.Taint) *v1.Node {
	n := makeNode(name, labels)
	n.Spec.Taints = taints
	return n
}

func armLabels() map[string]string {
	return map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: "arm64"}
}

func newTaintToleration(t *testing.T, h *harness) *TaintToleration {
	t.Helper()
	pl, err := NewTaintToleration(testContext(t), nil, h.handle)
	if err != nil {
		t.Fatalf("NewTaintToleration: %v", err)
	}
	tt, ok := pl.(*TaintToleration)
	if !ok {
		t.Fatalf("NewTaintToleration returned %T", pl)
	}
	if tt.Name() != TaintTolerationName {
		t.Errorf("Name() = %q, want %q", tt.Name(), TaintTolerationName)
	}
	return tt
}

var untolerated = want(fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)")

func TestArchAwareTaintToleration(t *testing.T) {
	armTainted := taintedNode("arm-tainted", armLabels(), archTaintARM64)
	tests := []struct {
		name                string
		archTaintToleration bool
		pod                 *v1.Pod
		node                *v1.Node
		want                statusResult
	}{
		{
			name:                "images support arm64, archTaintToleration on",
			archTaintToleration: true,
			pod:                 makePod("p", imgMulti).Obj(),
			node:                armTainted,
			want:                success,
		},
		{
			name:                "arm64-only image, archTaintToleration on",
			archTaintToleration: true,
			pod:                 makePod("p", imgARM64).Obj(),
			node:                armTainted,
			want:                success,
		},
		{
			name:                "beta-labelled arm node",
			archTaintToleration: true,
			pod:                 makePod("p", imgARM64).Obj(),
			node:                taintedNode("beta-arm", map[string]string{"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "arm64"}, archTaintARM64),
			want:                success,
		},
		{
			name:                "images support arm64, archTaintToleration off",
			archTaintToleration: false,
			pod:                 makePod("p", imgMulti).Obj(),
			node:                armTainted,
			want:                untolerated,
		},
		{
			name:                "amd64-only image",
			archTaintToleration: true,
			pod:                 makePod("p", imgAMD64).Obj(),
			node:                armTainted,
			want:                untolerated,
		},
		{
			name:                "unrelated taint beside the arch taint is still enforced",
			archTaintToleration: true,
			pod:                 makePod("p", imgARM64).Obj(),
			node:                taintedNode("arm-gpu", armLabels(), archTaintARM64, dedicatedTaint),
			want:                untolerated,
		},
		{
			name:                "unrelated taint alone",
			archTaintToleration: true,
			pod:                 makePod("p", imgARM64).Obj(),
			node:                taintedNode("arm-gpu", armLabels(), dedicatedTaint),
			want:                untolerated,
		},
		{
			name:                "arch taint with effect NoExecute is not an arch taint to tolerate",
			archTaintToleration: true,
			pod:                 makePod("p", imgARM64).Obj(),
			node:                taintedNode("arm-noexec", armLabels(), v1.Taint{Key: v1.LabelArchStable, Value: "arm64", Effect: v1.TaintEffectNoExecute}),
			want:                untolerated,
		},
		{
			name:                "explicit toleration, archTaintToleration off",
			archTaintToleration: false,
			pod: makePod("p", imgAMD64).Tolerations([]v1.Toleration{
				{Key: v1.LabelArchStable, Operator: v1.TolerationOpEqual, Value: "arm64", Effect: v1.TaintEffectNoSchedule},
			}).Obj(),
			node: armTainted,
			want: success,
		},
		{
			name:                "ArchFilter state absent (skip annotation)",
			archTaintToleration: true,
			pod:                 makePod("p", imgARM64).Annotation(annotations.Skip, "true").Obj(),
			node:                armTainted,
			want:                untolerated,
		},
		{
			name:                "unconstrained pod (data-only image): an unknown image does not slip past the taint",
			archTaintToleration: true,
			pod:                 makePod("p", imgData).Obj(),
			node:                armTainted,
			want:                untolerated,
		},
		{
			name:                "resolution failed under Ignore: no constrained set",
			archTaintToleration: true,
			pod:                 makePod("p", imgFailed).Obj(),
			node:                armTainted,
			want:                untolerated,
		},
		{
			name:                "image runs everywhere (PreFilter Skip, state written)",
			archTaintToleration: true,
			pod:                 makePod("p", imgEverywhere).Obj(),
			node:                armTainted,
			want:                success,
		},
		{
			name:                "node without platform labels",
			archTaintToleration: true,
			pod:                 makePod("p", imgARM64).Obj(),
			node:                taintedNode("bare-tainted", nil, archTaintARM64),
			want:                untolerated,
		},
		{
			name:                "untainted node",
			archTaintToleration: false,
			pod:                 makePod("p", imgAMD64).Obj(),
			node:                makeNode("plain", armLabels()),
			want:                success,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			args := defaultArgs(t)
			args.ArchTaintToleration = tc.archTaintToleration
			h := newHarness(t, ctx, harnessConfig{args: args})
			tt := newTaintToleration(t, h)
			state, _, status := h.preFilter(ctx, tc.pod)
			if !status.IsSuccess() && status.Code() != fwk.Skip {
				t.Fatalf("ArchFilter PreFilter: %v", status)
			}
			got := tt.Filter(ctx, state, tc.pod, nodeInfo(tc.node))
			if diff := cmp.Diff(tc.want, statusOf(got)); diff != "" {
				t.Errorf("Filter (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestArchAwareTaintTolerationWithoutStateIsInTree: without ArchFilter's
// state the wrapper answers exactly like the in-tree TaintToleration.
func TestArchAwareTaintTolerationWithoutStateIsInTree(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	tt := newTaintToleration(t, h)
	inTreePlugin, err := tainttoleration.New(ctx, nil, h.handle, plfeature.Features{})
	if err != nil {
		t.Fatal(err)
	}
	inTree := inTreePlugin.(fwk.FilterPlugin)
	nodes := []*v1.Node{
		makeNode("plain", armLabels()),
		taintedNode("arch", armLabels(), archTaintARM64),
		taintedNode("dedicated", armLabels(), dedicatedTaint),
		taintedNode("both", armLabels(), archTaintARM64, dedicatedTaint),
		taintedNode("prefer", armLabels(), v1.Taint{Key: "k", Value: "v", Effect: v1.TaintEffectPreferNoSchedule}),
		taintedNode("noexec", armLabels(), v1.Taint{Key: "k", Value: "v", Effect: v1.TaintEffectNoExecute}),
	}
	pods := []*v1.Pod{
		makePod("plain", imgARM64).Obj(),
		makePod("tolerates-arch", imgARM64).Tolerations([]v1.Toleration{{Key: v1.LabelArchStable, Operator: v1.TolerationOpExists}}).Obj(),
		makePod("tolerates-all", imgARM64).Tolerations([]v1.Toleration{{Operator: v1.TolerationOpExists}}).Obj(),
		makePod("tolerates-dedicated", imgARM64).Tolerations([]v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}}).Obj(),
	}
	for _, pod := range pods {
		for _, node := range nodes {
			state := framework.NewCycleState()
			want := statusOf(inTree.Filter(ctx, state, pod, nodeInfo(node)))
			got := statusOf(tt.Filter(ctx, state, pod, nodeInfo(node)))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("pod %s, node %s: wrapper differs from in-tree (-in-tree,+wrapper):\n%s", pod.Name, node.Name, diff)
			}
		}
	}
}

// TestArchAwareTaintTolerationNodeAddedHint: a pod the wrapper rejected (every
// node had an untolerated taint) must be requeued when an arm64 node carrying
// only the arch taint its images tolerate is added. The embedded in-tree hint
// does not know about arch tolerance and returns QueueSkip, so the pod waits
// for the 5-minute flush.
func TestArchAwareTaintTolerationNodeAddedHint(t *testing.T) {
	ctx := testContext(t)
	args := defaultArgs(t)
	args.ArchTaintToleration = true
	h := newHarness(t, ctx, harnessConfig{args: args})
	tt := newTaintToleration(t, h)
	pod := makePod("p", imgARM64).Obj()
	newNode := taintedNode("arm-new", armLabels(), archTaintARM64)

	// The scheduling cycle would accept the node.
	state, _, _ := h.preFilter(ctx, pod)
	if s := tt.Filter(ctx, state, pod, nodeInfo(newNode)); !s.IsSuccess() {
		t.Fatalf("Filter rejects the new node: %v", s)
	}

	evs, err := tt.EventsToRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Event.Resource != fwk.Node || ev.Event.ActionType&fwk.Add == 0 {
			continue
		}
		got, err := ev.QueueingHintFn(klog.FromContext(ctx), pod, nil, newNode)
		if err != nil {
			t.Fatal(err)
		}
		if got != fwk.Queue {
			t.Errorf("Node/Add hint for an arm64 node whose only taint the pod's images tolerate = %v, want Queue", got)
		}
		return
	}
	t.Fatal("no Node/Add event registered")
}

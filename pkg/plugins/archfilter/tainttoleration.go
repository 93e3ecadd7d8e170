package archfilter

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"

	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/archfilter/archfilter/pkg/platform"
)

// TaintTolerationName is the in-tree TaintToleration with one addition: when
// ArchFilter's archTaintToleration is on, a kubernetes.io/arch=<arch>:NoSchedule
// taint (GKE puts one on every Arm node) counts as tolerated by a pod whose
// images all run on <arch>. A profile enables it in place of TaintToleration.
const TaintTolerationName = "ArchAwareTaintToleration"

// TaintToleration embeds the in-tree plugin for scoring and queueing hints and
// overrides Filter.
type TaintToleration struct {
	*tainttoleration.TaintToleration
	taints taintMatcher
}

var (
	_ fwk.FilterPlugin      = &TaintToleration{}
	_ fwk.PreScorePlugin    = &TaintToleration{}
	_ fwk.ScorePlugin       = &TaintToleration{}
	_ fwk.EnqueueExtensions = &TaintToleration{}
)

// NewTaintToleration builds the wrapper around the in-tree plugin.
func NewTaintToleration(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	fts := plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	inner, err := tainttoleration.New(ctx, obj, h, fts)
	if err != nil {
		return nil, err
	}
	tt, ok := inner.(*tainttoleration.TaintToleration)
	if !ok {
		return nil, fmt.Errorf("in-tree TaintToleration has type %T", inner)
	}
	return &TaintToleration{TaintToleration: tt, taints: newTaintMatcher(fts)}, nil
}

// Name returns the wrapper's own name, so both can be registered.
func (pl *TaintToleration) Name() string { return TaintTolerationName }

// Filter is the in-tree Filter, except that arch taints the pod's images
// support are tolerated. Nodes without taints cost what the in-tree one costs.
func (pl *TaintToleration) Filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	logger := klog.FromContext(ctx)
	taint, untolerated := pl.taints.untolerated(logger, node.Spec.Taints, pod.Spec.Tolerations, helper.DoNotScheduleTaintsFilterFunc())
	if !untolerated {
		return nil
	}
	if supported := archTaintsSupported(state, node); supported != nil {
		// Look again, skipping the arch taints the pod's images run under.
		taint, untolerated = pl.taints.untolerated(logger, node.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
			return (t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute) && !supported(t)
		})
		if !untolerated {
			return nil
		}
	}
	logger.V(5).Info("node had untolerated taints", "node", klog.KObj(node), "pod", klog.KObj(pod), "untoleratedTaint", taint)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)")
}

// EventsToRegister is the in-tree registration with one change to the Node
// hint: a node whose only untolerated taints are kubernetes.io/arch NoSchedule
// taints may now fit (Filter tolerates those the pod's images support), so it
// queues the pod where the in-tree hint would skip it.
func (pl *TaintToleration) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	events, err := pl.TaintToleration.EventsToRegister(ctx)
	if err != nil {
		return nil, err
	}
	for i := range events {
		inner := events[i].QueueingHintFn
		if events[i].Event.Resource != fwk.Node || inner == nil {
			continue
		}
		events[i].QueueingHintFn = func(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
			hint, err := inner(logger, pod, oldObj, newObj)
			if err != nil || hint == fwk.Queue {
				return hint, err
			}
			if node, ok := newObj.(*v1.Node); ok && pl.taints.onlyArchUntolerated(logger, node, pod) {
				return fwk.Queue, nil
			}
			return hint, nil
		}
	}
	return events, nil
}

// onlyArchUntolerated reports whether the pod tolerates every
// NoSchedule/NoExecute taint of node except kubernetes.io/arch NoSchedule ones,
// and at least one of those is present.
func (m taintMatcher) onlyArchUntolerated(logger klog.Logger, node *v1.Node, pod *v1.Pod) bool {
	arch := false
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if m.tolerates(logger, pod.Spec.Tolerations, t) {
			continue
		}
		if t.Key != v1.LabelArchStable || t.Effect != v1.TaintEffectNoSchedule {
			return false
		}
		arch = true
	}
	return arch
}

// archTaintsSupported returns a predicate for arch taints the pod's images
// support on node, or nil when ArchFilter has no constrained set for the pod
// (not in scope, unresolved, or archTaintToleration off): an unknown image
// must not slip past a taint.
func archTaintsSupported(state fwk.CycleState, node *v1.Node) func(*v1.Taint) bool {
	s, err := readState(state)
	if err != nil || !s.tolerateArchTaints || s.set.IsAny() {
		return nil
	}
	np, ok := platform.FromNode(node)
	if !ok {
		return nil
	}
	return func(t *v1.Taint) bool {
		return t.Key == v1.LabelArchStable && t.Effect == v1.TaintEffectNoSchedule &&
			s.set.MatchesNode(platform.NodePlatform{OS: np.OS, Architecture: t.Value, WindowsBuild: np.WindowsBuild})
	}
}

package archfilter

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/archfilter/archfilter/apis/annotations"
	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/policystore"
)

// EventsToRegister lists the events that can make a pod ArchFilter rejected
// schedulable: a node of a supported platform appearing (added, or relabelled)
// and the pod itself changing its images, annotations or node requirements.
//
// With ArchFilterPolicy objects watched, a policy added, changed or deleted in
// the pod's namespace that selects the pod (before or after) queues it too. The
// event is registered only when the CRD was installed and listable when the
// scheduler started: the scheduler waits for the informers of the events it
// registers, and would wait forever for one of a resource the cluster does not
// serve. The store's own change callback activates the pods a change selects
// as well (requeueForPolicy), which covers a CRD installed later and a
// queueing hint that ran before the store saw the change.
func (pl *ArchFilter) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	events := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
		{Event: podSelfUpdate, QueueingHintFn: pl.isSchedulableAfterPodUpdate},
	}
	if pl.policyEvents {
		events = append(events, fwk.ClusterEventWithHint{Event: policyEvent, QueueingHintFn: pl.isSchedulableAfterPolicyChange})
	}
	return events, nil
}

// policyEvent is any change of an ArchFilterPolicy, named as the scheduler
// names a custom resource: <plural>.<version>.<group>.
var policyEvent = fwk.ClusterEvent{
	Resource:   fwk.EventResource(policyv1alpha1.Resource + "." + policyv1alpha1.SchemeGroupVersion.Version + "." + policyv1alpha1.GroupName),
	ActionType: fwk.All,
}

// isSchedulableAfterPolicyChange queues the pod when the policy, before or
// after the change, is in the pod's namespace and selects it. A policy that
// does not parse counts as selecting it: its change may have lifted a rule.
func (pl *ArchFilter) isSchedulableAfterPolicyChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	for _, obj := range []any{oldObj, newObj} {
		if obj == nil {
			continue
		}
		p, err := policystore.FromObject(obj)
		if err != nil {
			return fwk.Queue, err
		}
		if p.Namespace != pod.Namespace {
			return fwk.QueueSkip, nil
		}
		parsed, err := decision.ParsePolicy(p)
		if err != nil || parsed.Selects(pod) {
			logger.V(5).Info("ArchFilterPolicy selecting the pod changed", "pod", klog.KObj(pod), "policy", klog.KObj(p))
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}

// isSchedulableAfterNodeChange queues the pod when the added or relabelled node
// has a platform the pod's images run on (and did not have it before).
func (pl *ArchFilter) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	newPlatform, ok := platform.FromNode(newNode)
	if !ok {
		// Filter accepts nodes that report no platform.
		return fwk.Queue, nil
	}
	if oldNode != nil {
		if oldPlatform, ok := platform.FromNode(oldNode); ok && oldPlatform == newPlatform {
			return fwk.QueueSkip, nil
		}
	}
	if pl.held.isHeld(pod.UID) {
		// Held at PreEnqueue: the resolver callback releases it, and a node
		// event would only re-run PreEnqueue to hold it again.
		return fwk.QueueSkip, nil
	}
	set, ok := pl.resolvedPlatforms(pod)
	if !ok {
		// Unknown, failed or conflicting platforms: no node change fixes that;
		// resolver callbacks and retry timers requeue the pod.
		return fwk.QueueSkip, nil
	}
	if set.MatchesNode(newPlatform) {
		logger.V(5).Info("Node of a supported platform appeared", "pod", klog.KObj(pod), "node", klog.KObj(newNode), "platform", newPlatform.String())
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// isSchedulableAfterPodUpdate queues the pod when it changed what ArchFilter
// reads: images, archfilter annotations, spec.os, nodeSelector or affinity.
// Another pod's update never does (1.35 calls it for those too).
func (pl *ArchFilter) isSchedulableAfterPodUpdate(_ klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldPod, newPod, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if oldPod == nil || newPod.UID != pod.UID {
		return fwk.QueueSkip, nil
	}
	if !labels.Equals(oldPod.Labels, newPod.Labels) && len(pl.policies.Lookup(newPod.Namespace)) > 0 {
		// Which policy governs the pod may have changed.
		return fwk.Queue, nil
	}
	if !slices.Equal(podplatform.Images(oldPod), podplatform.Images(newPod)) ||
		oldPod.Annotations[annotations.Platforms] != newPod.Annotations[annotations.Platforms] ||
		oldPod.Annotations[annotations.Skip] != newPod.Annotations[annotations.Skip] ||
		!apiequality.Semantic.DeepEqual(oldPod.Spec.OS, newPod.Spec.OS) ||
		!apiequality.Semantic.DeepEqual(oldPod.Spec.NodeSelector, newPod.Spec.NodeSelector) ||
		!apiequality.Semantic.DeepEqual(oldPod.Spec.Affinity, newPod.Spec.Affinity) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

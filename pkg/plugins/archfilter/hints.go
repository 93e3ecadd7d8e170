package archfilter

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
)

// EventsToRegister lists the events that can make a pod ArchFilter rejected
// schedulable: a node of a supported platform appearing (added, or relabelled)
// and the pod itself changing its images, annotations or node requirements.
func (pl *ArchFilter) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
		{Event: podSelfUpdate, QueueingHintFn: pl.isSchedulableAfterPodUpdate},
	}, nil
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

//go:build k8s1.35

package archfilter

import fwk "k8s.io/kube-scheduler/framework"

// podSelfUpdate, Kubernetes 1.35: the queue has no event for the pod's own
// update alone, so every pod update is registered and
// isSchedulableAfterPodUpdate skips those of other pods.
var podSelfUpdate = fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Update}

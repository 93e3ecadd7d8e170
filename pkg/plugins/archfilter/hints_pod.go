//go:build !k8s1.35

package archfilter

import fwk "k8s.io/kube-scheduler/framework"

// podSelfUpdate is the event of the pod's own update. From 1.37 the queue
// tells the pod's own updates (TargetPod) from those of other unscheduled
// pods (UnscheduledPod) and of bound pods (AssignedPod): registering TargetPod
// alone spares isSchedulableAfterPodUpdate a call, for every pod ArchFilter
// rejected, on each status update of every running pod in the cluster.
var podSelfUpdate = fwk.ClusterEvent{Resource: fwk.TargetPod, ActionType: fwk.Update}

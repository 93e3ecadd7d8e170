//go:build !k8s1.35

package cycle

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// queuedPod is what Scheduler.SchedulePod takes: from 1.36 on, the scheduling
// queue's entry for the pod, which the queue builds when the pod is added (outside
// the cycle). Its PodSignature stays nil: opportunistic batching reuses a cycle's
// scores only once the previous pod of the same signature was bound, and nothing is
// bound here, so every cycle is a full one, as a pod of a new kind gets.
type queuedPod = *framework.QueuedPodInfo

func newQueuedPod(pod *v1.Pod) (queuedPod, error) {
	info, err := framework.NewPodInfo(pod)
	if err != nil {
		return nil, err
	}
	return &framework.QueuedPodInfo{PodInfo: info}, nil
}

// podOf is the pod of a queue entry.
func podOf(q queuedPod) *v1.Pod { return q.Pod }

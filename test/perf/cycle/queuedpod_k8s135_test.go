//go:build k8s1.35

package cycle

import v1 "k8s.io/api/core/v1"

// queuedPod is what Scheduler.SchedulePod takes: in 1.35, the pod itself.
type queuedPod = *v1.Pod

func newQueuedPod(pod *v1.Pod) (queuedPod, error) { return pod, nil }

// podOf is the pod of a queue entry: the entry itself.
func podOf(q queuedPod) *v1.Pod { return q }

//go:build !k8s1.35

package archfilter

import v1 "k8s.io/api/core/v1"

// podGroupName is the PodGroup of Kubernetes' gang scheduling (1.36+,
// pod.spec.schedulingGroup), or "".
func podGroupName(pod *v1.Pod) string {
	if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName
	}
	return ""
}

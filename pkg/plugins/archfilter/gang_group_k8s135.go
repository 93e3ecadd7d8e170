//go:build k8s1.35

package archfilter

import v1 "k8s.io/api/core/v1"

// podGroupName is the PodGroup of Kubernetes 1.35's gang scheduling
// (GenericWorkload alpha: pod.spec.workloadRef names a Workload and a PodGroup
// of it), or "". 1.36 replaced workloadRef with spec.schedulingGroup
// (gang_group.go).
func podGroupName(pod *v1.Pod) string {
	if ref := pod.Spec.WorkloadRef; ref != nil && ref.PodGroup != "" {
		// A PodGroup name is unique only within its Workload, and each
		// replica of it is a gang of its own.
		group := ref.Name + "/" + ref.PodGroup
		if ref.PodGroupReplicaKey != "" {
			group += "/" + ref.PodGroupReplicaKey
		}
		return group
	}
	return ""
}

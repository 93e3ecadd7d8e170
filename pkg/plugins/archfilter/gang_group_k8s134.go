//go:build k8s1.34

package archfilter

import v1 "k8s.io/api/core/v1"

// podGroupName is "": Kubernetes 1.34 has no pod.spec.schedulingGroup; gangs
// are scheduler-plugins' Coscheduling label there.
func podGroupName(*v1.Pod) string { return "" }

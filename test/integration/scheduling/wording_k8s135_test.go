//go:build k8s1.35

package scheduling

// schedulerOnlyWording, Kubernetes 1.35: DynamicResources' PostFilter adds
// "no new claims to deallocate," before the preemption sentence, which 1.37's
// leaves out when the pod has no claims.
var schedulerOnlyWording = []string{" no new claims to deallocate,"}

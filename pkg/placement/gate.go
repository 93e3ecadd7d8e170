package placement

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// HasGate reports whether pod carries the placement gate.
func HasGate(pod *v1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.SchedulingGates, isGate)
}

// WithoutGate returns gates without the placement gate (nil when none remain).
func WithoutGate(gates []v1.PodSchedulingGate) []v1.PodSchedulingGate {
	out := slices.DeleteFunc(slices.Clone(gates), isGate)
	if len(out) == 0 {
		return nil
	}
	return out
}

func isGate(g v1.PodSchedulingGate) bool { return g.Name == GateName }

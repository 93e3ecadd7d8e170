// +k8s:deepcopy-gen=package
// +groupName=archfilter.io
// +kubebuilder:object:generate=true

// Package v1alpha1 is ArchFilterPolicy (archfilter.io/v1alpha1): the namespaced
// rules a team sets for its own pods (the platforms they prefer and may run on,
// the failure policy, an opt-out), honoured by the scheduler plugin, the
// placement mode and kubectl archfilter alike through package decision.
package v1alpha1

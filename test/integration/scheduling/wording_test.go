//go:build !k8s1.35

package scheduling

// schedulerOnlyWording is text that this flavour's kube-scheduler writes into
// FailedScheduling and the main line's does not: the golden outputs in the docs
// are the main line's, so normalise removes it. Nothing on the main line.
var schedulerOnlyWording []string

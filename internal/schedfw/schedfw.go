//go:build !k8s1.34

// Package schedfw names the scheduler framework's plugin interfaces and the
// types in their signatures from one import path for every Kubernetes minor
// archfilter builds for. From 1.35 they live in k8s.io/kube-scheduler/framework
// (this file, the main line); in 1.34 they lived in
// k8s.io/kubernetes/pkg/scheduler/framework (schedfw_k8s134.go, built with the
// k8s1.34 tag and go.k8s1.34.mod). Everything else the plugin uses
// (Status, CycleState, NodeInfo, ClusterEvent, QueueingHint) is in
// k8s.io/kube-scheduler/framework in both, and is imported from there.
package schedfw

import fwk "k8s.io/kube-scheduler/framework"

// The aliases are the upstream types themselves, so a plugin written against
// them satisfies the framework of the minor it is built with.
type (
	Handle              = fwk.Handle
	Plugin              = fwk.Plugin
	PodActivator        = fwk.PodActivator
	PreEnqueuePlugin    = fwk.PreEnqueuePlugin
	PreFilterPlugin     = fwk.PreFilterPlugin
	PreFilterExtensions = fwk.PreFilterExtensions
	PreFilterResult     = fwk.PreFilterResult
	FilterPlugin        = fwk.FilterPlugin
	PreScorePlugin      = fwk.PreScorePlugin
	ScorePlugin         = fwk.ScorePlugin
	ScoreExtensions     = fwk.ScoreExtensions
	ReservePlugin       = fwk.ReservePlugin
	NodeScore           = fwk.NodeScore
	NodeScoreList       = fwk.NodeScoreList
	EnqueueExtensions   = fwk.EnqueueExtensions
)

// MaxNodeScore is the highest score a Score plugin may return.
const MaxNodeScore = fwk.MaxNodeScore

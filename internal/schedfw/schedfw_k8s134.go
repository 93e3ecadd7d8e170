//go:build k8s1.34

package schedfw

import "k8s.io/kubernetes/pkg/scheduler/framework"

// Kubernetes 1.34: the same names, from their 1.34 home.
type (
	Handle              = framework.Handle
	Plugin              = framework.Plugin
	PodActivator        = framework.PodActivator
	PreEnqueuePlugin    = framework.PreEnqueuePlugin
	PreFilterPlugin     = framework.PreFilterPlugin
	PreFilterExtensions = framework.PreFilterExtensions
	PreFilterResult     = framework.PreFilterResult
	FilterPlugin        = framework.FilterPlugin
	PreScorePlugin      = framework.PreScorePlugin
	ScorePlugin         = framework.ScorePlugin
	ScoreExtensions     = framework.ScoreExtensions
	ReservePlugin       = framework.ReservePlugin
	NodeScore           = framework.NodeScore
	NodeScoreList       = framework.NodeScoreList
	EnqueueExtensions   = framework.EnqueueExtensions
)

// MaxNodeScore is the highest score a Score plugin may return.
const MaxNodeScore = framework.MaxNodeScore

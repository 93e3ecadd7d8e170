package archfilter

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// taintMatcher matches taints and tolerations as the in-tree TaintToleration
// of this Kubernetes minor does. From 1.35 that takes a logger and the
// TaintTolerationComparisonOperators gate (Gt/Lt tolerations).
type taintMatcher struct {
	comparisonOperators bool
}

func newTaintMatcher(fts plfeature.Features) taintMatcher {
	return taintMatcher{comparisonOperators: fts.EnableTaintTolerationComparisonOperators}
}

func (m taintMatcher) untolerated(logger klog.Logger, taints []v1.Taint, tolerations []v1.Toleration, filter func(*v1.Taint) bool) (v1.Taint, bool) {
	return corev1.FindMatchingUntoleratedTaint(logger, taints, tolerations, filter, m.comparisonOperators)
}

func (m taintMatcher) tolerates(logger klog.Logger, tolerations []v1.Toleration, taint *v1.Taint) bool {
	return corev1.TolerationsTolerateTaint(logger, tolerations, taint, m.comparisonOperators)
}

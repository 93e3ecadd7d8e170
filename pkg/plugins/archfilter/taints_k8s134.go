//go:build k8s1.34

package archfilter

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// taintMatcher, Kubernetes 1.34: matching takes neither a logger nor a gate
// (comparison-operator tolerations came in 1.35).
type taintMatcher struct{}

func newTaintMatcher(plfeature.Features) taintMatcher { return taintMatcher{} }

func (taintMatcher) untolerated(_ klog.Logger, taints []v1.Taint, tolerations []v1.Toleration, filter func(*v1.Taint) bool) (v1.Taint, bool) {
	return corev1.FindMatchingUntoleratedTaint(taints, tolerations, filter)
}

func (taintMatcher) tolerates(_ klog.Logger, tolerations []v1.Toleration, taint *v1.Taint) bool {
	return corev1.TolerationsTolerateTaint(tolerations, taint)
}

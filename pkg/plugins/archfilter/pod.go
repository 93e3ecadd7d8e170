package archfilter

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
)

// skipDaemonSet is the skip reason of DaemonSet pods under daemonSetPolicy Skip.
const skipDaemonSet = "DaemonSet pod"

// scope decides which pods ArchFilter looks at. Everything it reads is in
// memory (the pod, and the namespace informer's cache).
type scope struct {
	settings   *settings
	namespaces corelisters.NamespaceLister // nil when no namespaceSelector is set
}

// skipReason says why a pod is out of scope, or "" when ArchFilter applies.
func (s *scope) skipReason(pod *v1.Pod) string {
	skip, _ := annotations.ParseSkip(pod.Annotations[annotations.Skip])
	switch {
	case skip:
		return "annotation " + annotations.Skip
	case s.settings.excludedNamespaces.Has(pod.Namespace):
		return "excluded namespace"
	case s.settings.daemonSetPolicy == config.DaemonSetPolicySkip && isDaemonSetPod(pod):
		return skipDaemonSet
	case s.settings.namespaceSelector != nil && !s.namespaceSelected(pod.Namespace):
		return "namespace not selected"
	}
	return ""
}

func (s *scope) namespaceSelected(name string) bool {
	ns, err := s.namespaces.Get(name)
	if err != nil {
		// Not in the informer yet (or gone): do not constrain a pod on a guess.
		return false
	}
	return s.settings.namespaceSelector.Matches(labels.Set(ns.Labels))
}

func isDaemonSetPod(pod *v1.Pod) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	return ref != nil && ref.Kind == "DaemonSet"
}

package archfilter

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/archfilter/archfilter/pkg/decision"
)

// scope asks package decision which pods ArchFilter looks at. Everything it
// reads is in memory (the pod, and the namespace informer's cache).
type scope struct {
	settings *decision.Settings
	// policies reads the ArchFilterPolicy store; nil without policies.
	policies   decision.PolicyLookup
	namespaces corelisters.NamespaceLister // nil when no namespaceSelector is set
	// labelsOf is namespaceLabels, bound once so that asking does not allocate.
	labelsOf decision.NamespaceLabels
}

func newScope(s *decision.Settings) *scope {
	sc := &scope{settings: s}
	sc.labelsOf = sc.namespaceLabels
	return sc
}

// skipReason says why a pod is out of scope, or "" when ArchFilter applies.
func (s *scope) skipReason(pod *v1.Pod) decision.SkipReason {
	return s.settings.ForPod(pod, s.policies).Scope(pod, decision.ViaScheduler, s.labelsOf)
}

// namespaceLabels reads the namespace informer's cache. A namespace not in it
// yet (or gone) is not known: the rules do not constrain a pod on a guess.
func (s *scope) namespaceLabels(name string) (labels.Set, bool) {
	if s.namespaces == nil {
		return nil, false
	}
	ns, err := s.namespaces.Get(name)
	if err != nil {
		return nil, false
	}
	return ns.Labels, true
}

package archfilter

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/platform"
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

// forEachImage calls fn with every image the node must pull before the pod
// runs: containers, init and sidecar containers, and image volumes. Ephemeral
// containers are added after scheduling and cannot influence placement.
func forEachImage(pod *v1.Pod, fn func(image string) bool) {
	for i := range pod.Spec.InitContainers {
		if !fn(pod.Spec.InitContainers[i].Image) {
			return
		}
	}
	for i := range pod.Spec.Containers {
		if !fn(pod.Spec.Containers[i].Image) {
			return
		}
	}
	for i := range pod.Spec.Volumes {
		if img := pod.Spec.Volumes[i].Image; img != nil && img.Reference != "" {
			if !fn(img.Reference) {
				return
			}
		}
	}
}

// podImages lists the distinct images of a pod, for events and comparisons.
func podImages(pod *v1.Pod) []string {
	var out []string
	seen := sets.New[string]()
	forEachImage(pod, func(image string) bool {
		if !seen.Has(image) {
			seen.Insert(image)
			out = append(out, image)
		}
		return true
	})
	return out
}

// ownConstraint is what the pod itself already requires of a node's os and
// arch, through spec.os, nodeSelector and required node affinity. A nil set
// means "no requirement".
type ownConstraint struct {
	os, arch sets.Set[string]
}

// podOwnConstraint extracts the os/arch requirements. Affinity terms are ORed,
// so a term that says nothing about arch allows every arch.
func podOwnConstraint(pod *v1.Pod) ownConstraint {
	var c ownConstraint
	if pod.Spec.OS != nil && pod.Spec.OS.Name != "" {
		c.os = sets.New(string(pod.Spec.OS.Name))
	}
	for key, value := range pod.Spec.NodeSelector {
		switch key {
		case v1.LabelOSStable, "beta.kubernetes.io/os":
			c.os = intersectOrSet(c.os, sets.New(value))
		case v1.LabelArchStable, "beta.kubernetes.io/arch":
			c.arch = intersectOrSet(c.arch, sets.New(value))
		}
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return c
	}
	terms := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	osAllowed, archAllowed := sets.New[string](), sets.New[string]()
	osAny, archAny := false, false
	for _, term := range terms {
		termOS, termArch := termValues(term, v1.LabelOSStable, "beta.kubernetes.io/os"), termValues(term, v1.LabelArchStable, "beta.kubernetes.io/arch")
		if termOS.any {
			osAny = true
		} else {
			osAllowed = osAllowed.Union(termOS.values)
		}
		if termArch.any {
			archAny = true
		} else {
			archAllowed = archAllowed.Union(termArch.values)
		}
	}
	if len(terms) > 0 && !osAny {
		c.os = intersectOrSet(c.os, osAllowed)
	}
	if len(terms) > 0 && !archAny {
		c.arch = intersectOrSet(c.arch, archAllowed)
	}
	return c
}

// termRequirement is what one node selector term allows for one label.
type termRequirement struct {
	any    bool
	values sets.Set[string]
}

// termValues reads the In requirements on keys from one term (expressions are
// ANDed). NotIn, Exists and DoesNotExist cannot be turned into a finite list
// here, so they leave the term unconstrained; the NodeAffinity plugin still
// enforces them.
func termValues(term v1.NodeSelectorTerm, keys ...string) termRequirement {
	req := termRequirement{any: true}
	for _, expr := range term.MatchExpressions {
		if expr.Operator != v1.NodeSelectorOpIn || !sets.New(keys...).Has(expr.Key) {
			continue
		}
		vals := sets.New(expr.Values...)
		if req.any {
			req = termRequirement{values: vals}
		} else {
			req.values = req.values.Intersection(vals)
		}
	}
	return req
}

func intersectOrSet(a, b sets.Set[string]) sets.Set[string] {
	if a == nil {
		return b
	}
	return a.Intersection(b)
}

// restrict keeps the platforms of set the pod's own requirements allow.
func (c ownConstraint) restrict(set platform.Set) platform.Set {
	if set.IsAny() || (c.os == nil && c.arch == nil) {
		return set
	}
	var kept []platform.Platform
	for _, p := range set.Platforms() {
		if (c.os == nil || c.os.Has(p.OS)) && (c.arch == nil || c.arch.Has(p.Architecture)) {
			kept = append(kept, p)
		}
	}
	return platform.NewSet(kept...)
}

package podplatform

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archfilter/archfilter/pkg/platform"
)

// Label keys a pod can constrain os and arch with; the beta keys are still
// honoured by the NodeAffinity plugin and set by the kubelet.
const (
	labelOSBeta   = "beta.kubernetes.io/os"
	labelArchBeta = "beta.kubernetes.io/arch"
)

// OwnConstraint is what the pod itself already requires of a node's os and
// arch, through spec.os, nodeSelector and required node affinity. A nil set
// means "no requirement".
type OwnConstraint struct {
	OS, Arch sets.Set[string]
}

// IsZero reports whether the pod requires nothing of os or arch.
func (c OwnConstraint) IsZero() bool { return c.OS == nil && c.Arch == nil }

// OwnConstraintOf extracts the pod's os/arch requirements. Affinity terms are
// ORed, so a term that says nothing about arch allows every arch.
func OwnConstraintOf(pod *v1.Pod) OwnConstraint {
	var c OwnConstraint
	if pod.Spec.OS != nil && pod.Spec.OS.Name != "" {
		c.OS = sets.New(string(pod.Spec.OS.Name))
	}
	for key, value := range pod.Spec.NodeSelector {
		switch key {
		case v1.LabelOSStable, labelOSBeta:
			c.OS = intersectOrSet(c.OS, sets.New(value))
		case v1.LabelArchStable, labelArchBeta:
			c.Arch = intersectOrSet(c.Arch, sets.New(value))
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
		termOS, termArch := termValues(term, v1.LabelOSStable, labelOSBeta), termValues(term, v1.LabelArchStable, labelArchBeta)
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
		c.OS = intersectOrSet(c.OS, osAllowed)
	}
	if len(terms) > 0 && !archAny {
		c.Arch = intersectOrSet(c.Arch, archAllowed)
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

// Restrict keeps the platforms of set the pod's own requirements allow.
func (c OwnConstraint) Restrict(set platform.Set) platform.Set {
	if set.IsAny() || c.IsZero() {
		return set
	}
	var kept []platform.Platform
	for _, p := range set.Platforms() {
		if (c.OS == nil || c.OS.Has(p.OS)) && (c.Arch == nil || c.Arch.Has(p.Architecture)) {
			kept = append(kept, p)
		}
	}
	return platform.NewSet(kept...)
}

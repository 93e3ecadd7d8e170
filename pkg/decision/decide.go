package decision

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// Reasons a pod in scope cannot be placed. The plugin's rejections, the
// placement mode's events and kubectl archfilter print these texts.
const (
	// ReasonNoCommonPlatform: the images share no platform.
	ReasonNoCommonPlatform = "the pod's images have no platform in common"
	// ReasonOwnConstraintConflict: the pod's own spec.os, nodeSelector or
	// node affinity excludes every platform its images run on.
	ReasonOwnConstraintConflict = "the pod's spec.os, nodeSelector or node affinity excludes every platform its images run on"
	// ReasonResolutionFailed: images did not resolve under failurePolicy Fail.
	ReasonResolutionFailed = "the platforms of the pod's images could not be resolved (failurePolicy Fail)"
	// ReasonInvalidAnnotation: archfilter.io/platforms cannot be parsed.
	ReasonInvalidAnnotation = "invalid archfilter annotation"
)

// Rejection kinds, also the values of the plugin's rejection metric label.
const (
	RejectInvalidAnnotation     = "InvalidAnnotation"
	RejectResolutionFailed      = "ResolutionFailed"
	RejectNoCommonPlatform      = "NoCommonPlatform"
	RejectOwnConstraintConflict = "OwnConstraintConflict"
)

// Source says where a decision's platforms came from.
type Source string

const (
	// SourceImages: the registries' answers for the pod's images.
	SourceImages Source = "images"
	// SourceAnnotation: the pod's archfilter.io/platforms annotation.
	SourceAnnotation Source = "annotation " + annotations.Platforms
)

// Lookup returns what is known, from memory, of the platforms of one image
// reference as the pod would pull it; ok is false while nothing is known.
type Lookup func(image string) (res resolver.Result, ok bool)

// Rejection is why a pod in scope cannot be placed now.
type Rejection struct {
	// Kind is one of the Reject* constants.
	Kind string
	// Message is for people: the Reason* text and the details.
	Message string
}

// Decision is what archfilter decides for a pod in scope.
type Decision struct {
	// Platforms are those the pod may run on: its images' (or declared)
	// platforms after the compatibility rules, narrowed by the fallback when
	// images did not resolve and by the pod's own os/arch constraints. Any
	// means no constraint. Not meaningful when Rejection is set.
	Platforms platform.Set
	// Source says where the platforms came from.
	Source Source
	// Pending are images with no answer yet; Failed, errors of images whose
	// resolution failed (each names its image, registry and credentials).
	Pending []string
	Failed  []error
	// FailedOpen is true when images are unresolved and failurePolicy Ignore
	// let the pod through, on the fallbackPlatforms or unconstrained.
	FailedOpen bool
	// Rejection is set when the pod cannot be placed now.
	Rejection *Rejection
	// RetryAt is when the earliest cached failure expires (zero if none), for
	// a rejection under failurePolicy Fail.
	RetryAt time.Time
	// Policy names the ArchFilterPolicy that governed the decision
	// ("namespace/name"); "" when none did.
	Policy string
}

// Unresolved names what is unknown, for people: pending images, then failures;
// "" when every image resolved.
func (d *Decision) Unresolved() string {
	var parts []string
	if len(d.Pending) > 0 {
		parts = append(parts, "still resolving "+strings.Join(d.Pending, ", "))
	}
	for _, err := range d.Failed {
		parts = append(parts, err.Error())
	}
	return strings.Join(parts, "; ")
}

// Declared reports whether pod declares its platforms (archfilter.io/platforms), so
// that no registry is asked.
func Declared(pod *v1.Pod) bool {
	_, ok := pod.Annotations[annotations.Platforms]
	return ok
}

// DeclaredPlatforms reads the platforms pod declares (archfilter.io/platforms),
// with the compatibility rules applied: declared is false when it declares
// none, and err says why a declaration does not parse (the pod cannot be
// judged then). The front-ends and package misplaced read declarations through
// it, so they cannot disagree on one.
func (s *Settings) DeclaredPlatforms(pod *v1.Pod) (set platform.Set, declared bool, err error) {
	value, ok := pod.Annotations[annotations.Platforms]
	if !ok {
		return set, false, nil
	}
	list, err := platform.ParseList(value)
	if err != nil {
		return set, true, fmt.Errorf("annotation %s: %w", annotations.Platforms, err)
	}
	return s.Compat.Expand(list), true, nil
}

// Decide applies the rules to a pod in scope (see Scope): its declared or
// images' platforms, with the compatibility rules, the failure policy for
// images lookup does not know or that failed, the platforms its
// ArchFilterPolicy allows (call it on the settings ForPod returns), and the
// pod's own os/arch constraints. Images lookup does not know count as unresolved: the front-end
// calls Decide when it will wait no longer. Memory only.
func (s *Settings) Decide(pod *v1.Pod, lookup Lookup) Decision {
	set, d, invalid := s.platforms(pod, lookup)
	if s.Policy != nil {
		d.Policy = s.Policy.Key()
	}
	if invalid != nil {
		d.Rejection = &Rejection{Kind: RejectInvalidAnnotation, Message: fmt.Sprintf("%s: %v", ReasonInvalidAnnotation, invalid)}
		return d
	}
	if len(d.Failed) > 0 || len(d.Pending) > 0 {
		if s.FailurePolicy == config.FailurePolicyFail {
			d.Rejection = &Rejection{Kind: RejectResolutionFailed, Message: ReasonResolutionFailed + ": " + d.Unresolved()}
			d.RetryAt = retryTime(pod, lookup)
			return d
		}
		d.FailedOpen = true
		set = set.Intersect(s.Fallback)
	}
	if !set.IsEmpty() {
		var rejected *Rejection
		if set, rejected = s.narrowToPolicy(set); rejected != nil {
			d.Rejection = rejected
			return d
		}
	}
	if set.IsEmpty() {
		msg := ReasonNoCommonPlatform
		if img, before, ok := podplatform.Emptying(pod, s.PlatformsOf(lookup)); ok && d.Source == SourceImages {
			msg = fmt.Sprintf("%s: %s runs on none of %s, the platforms of the images before it", ReasonNoCommonPlatform, img, before)
		}
		d.Rejection = &Rejection{Kind: RejectNoCommonPlatform, Message: msg}
		return d
	}
	restricted := podplatform.OwnConstraintOf(pod).Restrict(set)
	if restricted.IsEmpty() {
		d.Rejection = &Rejection{Kind: RejectOwnConstraintConflict, Message: fmt.Sprintf("%s (%s)", ReasonOwnConstraintConflict, set)}
		d.Platforms = set
		return d
	}
	d.Platforms = restricted
	return d
}

// platforms reads the declared platforms, or every image's from lookup, and
// intersects them; invalid is the error of a malformed declaration.
func (s *Settings) platforms(pod *v1.Pod, lookup Lookup) (set platform.Set, d Decision, invalid error) {
	if declared, ok, err := s.DeclaredPlatforms(pod); ok {
		return declared, Decision{Source: SourceAnnotation}, err
	}
	set = platform.Any()
	d = Decision{Source: SourceImages}
	podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
		res, ok := lookup(img.Reference)
		switch {
		case !ok:
			d.Pending = append(d.Pending, img.Reference)
		case res.Err != nil:
			d.Failed = append(d.Failed, res.Err)
		default:
			set = set.Intersect(s.Compat.Expand(res.Platforms))
		}
		return true
	})
	return set, d, nil
}

// AllKnown reports whether lookup knows every image of pod (success or failure):
// the plugin's PreEnqueue admits such a pod. It does not allocate.
func AllKnown(pod *v1.Pod, lookup Lookup) bool {
	known := true
	podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
		_, known = lookup(img.Reference)
		return known
	})
	return known
}

// Unknown lists the images of pod lookup knows nothing of, in spec order.
func Unknown(pod *v1.Pod, lookup Lookup) []string {
	var out []string
	podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
		if _, ok := lookup(img.Reference); !ok {
			out = append(out, img.Reference)
		}
		return true
	})
	return out
}

// PlatformsOf reads an image's platforms from lookup with the compatibility
// rules applied, for explaining a decision.
func (s *Settings) PlatformsOf(lookup Lookup) podplatform.PlatformsOf {
	return func(img podplatform.Image) (platform.Set, bool) {
		res, ok := lookup(img.Reference)
		if !ok || res.Err != nil {
			return platform.Set{}, false
		}
		return s.Compat.Expand(res.Platforms), true
	}
}

// retryTime is when the earliest cached failure of pod's images expires.
func retryTime(pod *v1.Pod, lookup Lookup) time.Time {
	var earliest time.Time
	podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
		if res, ok := lookup(img.Reference); ok && res.Err != nil && !res.Expires.IsZero() {
			if earliest.IsZero() || res.Expires.Before(earliest) {
				earliest = res.Expires
			}
		}
		return true
	})
	return earliest
}

// Exclusion says, for a person, why a pod allowed on d.Platforms cannot run on a
// node of platform node: the annotation that declared the platforms, the first
// image that does not run there, the fallback platforms of failurePolicy Ignore,
// or else the pod's own os/arch constraints. Memory only.
func (s *Settings) Exclusion(pod *v1.Pod, d *Decision, lookup Lookup, node platform.NodePlatform) string {
	np := node.Describe()
	if d.Source == SourceAnnotation {
		return fmt.Sprintf("its annotation %s excludes %s", annotations.Platforms, np)
	}
	if img, ok := podplatform.Excluding(pod, s.PlatformsOf(lookup), node); ok {
		return fmt.Sprintf("%s does not run on %s", img, np)
	}
	if d.FailedOpen && !s.Fallback.MatchesNode(node) {
		return fmt.Sprintf("fallbackPlatforms exclude %s while images are unresolved", np)
	}
	if p := s.Policy; p != nil && p.Allowed != nil && !p.Allowed.MatchesNode(node) {
		return fmt.Sprintf("ArchFilterPolicy %s does not allow %s", p.Key(), np)
	}
	return fmt.Sprintf("its own spec.os, nodeSelector or node affinity excludes %s", np)
}

package decision

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/pkg/platform"
)

// ReasonNotAllowedByPolicy: the pod's images run on none of the platforms its
// ArchFilterPolicy allows.
const ReasonNotAllowedByPolicy = "the pod's images run on none of the platforms its ArchFilterPolicy allows"

// RejectNotAllowedByPolicy is the rejection kind of ReasonNotAllowedByPolicy.
const RejectNotAllowedByPolicy = "NotAllowedByPolicy"

// SkipPolicyOptOut: the ArchFilterPolicy that governs the pod opts out.
const SkipPolicyOptOut SkipReason = "its ArchFilterPolicy opts out (spec.optOut)"

// Policy is an ArchFilterPolicy parsed once, in the shapes the rules use.
// Fields a policy leaves unset are zero: nil Preferences, a nil Allowed,
// an empty FailurePolicy.
type Policy struct {
	Namespace, Name string
	Generation      int64
	// selector is nil when the policy selects every pod of its namespace.
	selector    labels.Selector
	Preferences []Preference
	// Allowed is nil when the policy allows every platform.
	Allowed       *platform.Set
	FailurePolicy config.FailurePolicy
	OptOut        bool
	// Ignored are the fields set that ArchFilterArgs.policies.allowedOverrides
	// leave out; WithinLimits has cleared them.
	Ignored []config.PolicyField
}

// Key is "namespace/name", as messages name the policy.
func (p *Policy) Key() string { return p.Namespace + "/" + p.Name }

// SelectsAll reports whether the policy selects every pod of its namespace.
func (p *Policy) SelectsAll() bool { return p.selector == nil }

// Selects reports whether the policy selects pod (which must be in its
// namespace). It does not allocate.
func (p *Policy) Selects(pod *v1.Pod) bool {
	return p.selector == nil || p.selector.Matches(labels.Set(pod.Labels))
}

// Fields lists the fields the policy sets, in config.PolicyFields order.
func (p *Policy) Fields() []config.PolicyField {
	var out []config.PolicyField
	for _, f := range config.PolicyFields {
		if p.sets(f) {
			out = append(out, f)
		}
	}
	return out
}

func (p *Policy) sets(f config.PolicyField) bool {
	switch f {
	case config.PolicyFieldPreferredPlatforms:
		return p.Preferences != nil
	case config.PolicyFieldAllowedPlatforms:
		return p.Allowed != nil
	case config.PolicyFieldFailurePolicy:
		return p.FailurePolicy != ""
	case config.PolicyFieldOptOut:
		return p.OptOut
	}
	return false
}

// clear unsets field f.
func (p *Policy) clear(f config.PolicyField) {
	switch f {
	case config.PolicyFieldPreferredPlatforms:
		p.Preferences = nil
	case config.PolicyFieldAllowedPlatforms:
		p.Allowed = nil
	case config.PolicyFieldFailurePolicy:
		p.FailurePolicy = ""
	case config.PolicyFieldOptOut:
		p.OptOut = false
	}
}

// String describes what the policy sets, for people.
func (p *Policy) String() string {
	var parts []string
	if p.OptOut {
		parts = append(parts, "optOut")
	}
	if p.Allowed != nil {
		parts = append(parts, "allowedPlatforms "+p.Allowed.String())
	}
	if p.Preferences != nil {
		parts = append(parts, "preferredPlatforms "+PreferencesString(p.Preferences))
	}
	if p.FailurePolicy != "" {
		parts = append(parts, "failurePolicy "+string(p.FailurePolicy))
	}
	if len(parts) == 0 {
		return "ArchFilterPolicy " + p.Key() + " (sets nothing)"
	}
	return "ArchFilterPolicy " + p.Key() + " (" + strings.Join(parts, ", ") + ")"
}

// ParsePolicy parses obj. The CRD's schema refuses what does not parse, so an
// error means the schema was bypassed (or the CRD is older than this code):
// the policy is then not applied, and its status says why. Errors name the
// field by its path.
func ParsePolicy(obj *policyv1alpha1.ArchFilterPolicy) (*Policy, error) {
	spec := field.NewPath("spec")
	p := &Policy{
		Namespace:     obj.Namespace,
		Name:          obj.Name,
		Generation:    obj.Generation,
		FailurePolicy: config.FailurePolicy(derefString(obj.Spec.FailurePolicy)),
		OptOut:        obj.Spec.OptOut,
	}
	var errs field.ErrorList
	if sel := obj.Spec.PodSelector; sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
		selector, err := metav1.LabelSelectorAsSelector(LabelSelectorOf(sel))
		if err != nil {
			errs = append(errs, field.Invalid(spec.Child("podSelector"), sel, err.Error()))
		}
		p.selector = selector
	}
	if obj.Spec.PreferredPlatforms != nil {
		// An explicit empty list is a team's way to prefer nothing.
		p.Preferences = make([]Preference, 0, len(obj.Spec.PreferredPlatforms))
	}
	for i, pref := range obj.Spec.PreferredPlatforms {
		pp := spec.Child("preferredPlatforms").Index(i)
		pl, err := platform.Parse(pref.Platform)
		if err != nil {
			errs = append(errs, field.Invalid(pp.Child("platform"), pref.Platform, err.Error()))
			continue
		}
		if pref.Weight < 1 || pref.Weight > 100 {
			errs = append(errs, field.Invalid(pp.Child("weight"), pref.Weight, "must be between 1 and 100"))
			continue
		}
		p.Preferences = append(p.Preferences, Preference{Platform: pl, Weight: pref.Weight})
	}
	if len(obj.Spec.AllowedPlatforms) > 0 {
		var list []platform.Platform
		for i, s := range obj.Spec.AllowedPlatforms {
			pl, err := platform.Parse(s)
			if err != nil {
				errs = append(errs, field.Invalid(spec.Child("allowedPlatforms").Index(i), s, err.Error()))
				continue
			}
			list = append(list, pl)
		}
		set := platform.NewSet(list...)
		p.Allowed = &set
	}
	switch p.FailurePolicy {
	case "", config.FailurePolicyIgnore, config.FailurePolicyFail:
	default:
		errs = append(errs, field.NotSupported(spec.Child("failurePolicy"), p.FailurePolicy,
			[]string{string(config.FailurePolicyIgnore), string(config.FailurePolicyFail)}))
	}
	if err := errs.ToAggregate(); err != nil {
		return nil, fmt.Errorf("ArchFilterPolicy %s/%s: %w", obj.Namespace, obj.Name, err)
	}
	return p, nil
}

// LabelSelectorOf converts a policy's pod selector to the API's own type.
func LabelSelectorOf(sel *policyv1alpha1.LabelSelector) *metav1.LabelSelector {
	if sel == nil {
		return nil
	}
	out := &metav1.LabelSelector{}
	if sel.MatchLabels != nil {
		out.MatchLabels = make(map[string]string, len(sel.MatchLabels))
		for k, v := range sel.MatchLabels {
			out.MatchLabels[k] = string(v)
		}
	}
	for _, r := range sel.MatchExpressions {
		values := make([]string, len(r.Values))
		for i, v := range r.Values {
			values[i] = string(v)
		}
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: r.Key, Operator: metav1.LabelSelectorOperator(r.Operator), Values: values,
		})
	}
	return out
}

func derefString[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// ComparePolicies orders the policies of a namespace by precedence: one that
// selects pods by label before one that selects every pod, then by name. Of
// the policies that select a pod, the first in this order governs it.
func ComparePolicies(a, b *Policy) int {
	return cmp.Or(compareBool(a.SelectsAll(), b.SelectsAll()), cmp.Compare(a.Name, b.Name))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// SortPolicies sorts a namespace's policies by precedence (ComparePolicies).
func SortPolicies(ps []*Policy) { slices.SortFunc(ps, ComparePolicies) }

// PolicyLookup returns the policies of a namespace in precedence order
// (SortPolicies), from memory; nil when it has none.
type PolicyLookup func(namespace string) []*Policy

// Governing returns the policy that governs pod among policies (nil when none
// selects it, or policies are turned off), and the others that select it too.
// Memory only; it allocates only for the others.
func (s *Settings) Governing(pod *v1.Pod, policies PolicyLookup) (governs *Policy, others []*Policy) {
	if !s.PoliciesEnabled || policies == nil {
		return nil, nil
	}
	for _, p := range policies(pod.Namespace) {
		if !p.Selects(pod) {
			continue
		}
		if governs == nil {
			governs = p
		} else {
			others = append(others, p)
		}
	}
	return governs, others
}

// WithinLimits returns p with the fields ArchFilterArgs.policies does not let a
// policy override cleared and listed in Ignored; p itself is not changed.
func (s *Settings) WithinLimits(p *Policy) *Policy {
	out := *p
	out.Ignored = nil
	for _, f := range config.PolicyFields {
		if out.sets(f) && !slices.Contains(s.PolicyOverrides, f) {
			out.clear(f)
			out.Ignored = append(out.Ignored, f)
		}
	}
	return &out
}

// ForPod returns the settings that apply to pod: s itself when no policy
// governs it, else s with the governing policy's fields, within the limits of
// ArchFilterArgs.policies. The pod's own annotations still win over both (the
// rules read them after). Memory only; it allocates only when a policy
// governs the pod.
func (s *Settings) ForPod(pod *v1.Pod, policies PolicyLookup) *Settings {
	p, _ := s.Governing(pod, policies)
	if p == nil {
		return s
	}
	return s.WithPolicy(p)
}

// WithPolicy returns s with p's fields applied, within the limits of
// ArchFilterArgs.policies.
func (s *Settings) WithPolicy(p *Policy) *Settings {
	p = s.WithinLimits(p)
	out := *s
	out.Policy, out.cluster = p, s
	if p.Preferences != nil {
		out.Preferences = p.Preferences
		out.preferencesFrom = PreferenceSource("ArchFilterPolicy " + p.Key())
	}
	if p.FailurePolicy != "" {
		out.FailurePolicy = p.FailurePolicy
	}
	return &out
}

// ForImagesOf returns the settings that judge what the images of a pod left
// alone for skip allow, when archfilter still reads them (SkipReason.ReadsImages:
// a DaemonSet pod under daemonSetPolicy Skip, which the plugin warns about):
// the cluster's own, as its policy does not constrain a pod archfilter leaves
// alone. For any other skip, or none, s itself.
func (s *Settings) ForImagesOf(skip SkipReason) *Settings {
	if skip.ReadsImages() && s.cluster != nil {
		return s.cluster
	}
	return s
}

// optedOut reports whether the governing policy makes archfilter leave pod
// alone: it opts out, and the pod does not say archfilter.io/skip: "false".
func (s *Settings) optedOut(pod *v1.Pod) bool {
	if s.Policy == nil || !s.Policy.OptOut {
		return false
	}
	value, ok := pod.Annotations[annotations.Skip]
	if !ok {
		return true
	}
	skip, err := annotations.ParseSkip(value)
	return err != nil || skip
}

// narrowToPolicy intersects set with the governing policy's allowed platforms;
// the rejection is set when nothing is left.
func (s *Settings) narrowToPolicy(set platform.Set) (platform.Set, *Rejection) {
	if s.Policy == nil || s.Policy.Allowed == nil {
		return set, nil
	}
	narrowed := set.Intersect(*s.Policy.Allowed)
	if narrowed.IsEmpty() {
		return narrowed, &Rejection{Kind: RejectNotAllowedByPolicy, Message: fmt.Sprintf(
			"%s: ArchFilterPolicy %s allows %s, the images run on %s", ReasonNotAllowedByPolicy, s.Policy.Key(), s.Policy.Allowed, set)}
	}
	return narrowed, nil
}

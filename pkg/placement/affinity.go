// Package placement turns the platforms a pod's images run on into node
// affinity written into the pod, for the placement mode (any scheduler, any
// autoscaler): pure functions over pod specs, no I/O.
package placement

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
)

// GateName is the scheduling gate the placement webhook adds and the
// placement controller removes.
const GateName = "archfilter.io/placement"

// ErrConflict is returned when the pod's own os/arch constraints allow none
// of the platforms its images run on.
var ErrConflict = errors.New("the pod's own os/arch constraints allow none of its images' platforms")

// ErrUnmergeable wraps the reason a pod's node affinity cannot be merged.
var ErrUnmergeable = errors.New("node affinity cannot be merged")

// Option configures Merge.
type Option func(*options)

type options struct {
	windowsHosts []string
}

// WithWindowsHostBuilds adds node.kubernetes.io/windows-build values to the
// candidates Merge enumerates for Windows images, beside
// platform.KnownWindowsHostBuilds: the builds of the cluster's own Windows
// nodes, so that a release newer than archfilter's list is admitted too.
func WithWindowsHostBuilds(builds ...string) Option {
	return func(o *options) { o.windowsHosts = append(o.windowsHosts, builds...) }
}

// Merge returns a copy of pod's affinity with required terms for set and
// preferred terms for prefs added; pod is not modified.
//
// Required terms are ANDed into the pod's: a pod without required terms gets
// one term per operating system of set, with that OS's kubernetes.io/os,
// kubernetes.io/arch (and node.kubernetes.io/windows-build) expressions; each
// existing nodeSelectorTerm gets the expressions added (for several operating
// systems, their union, since a gated pod's terms can gain expressions but not
// siblings), so a node the result admits is one the pod admitted before. set
// is first restricted to the pod's own os/arch constraints (spec.os,
// nodeSelector, required affinity); if nothing is left Merge returns
// ErrConflict. A set that allows any platform adds no required term.
// Preferences are added for platforms set allows, unless the pod already has
// an identical preferred term.
//
// The Windows build expression lists every host build that runs the images
// by Microsoft's version-compatibility rules (platform.Set.WindowsHostBuilds):
// a node affinity cannot say "20348 or newer" (Gt takes an integer), so the
// builds are enumerated from platform.KnownWindowsHostBuilds and the builds of
// WithWindowsHostBuilds. A Windows Server 2022 image (10.0.20348) gets
// 10.0.20348 and every later known build; builds below 20348 stay exact.
func Merge(pod *v1.Pod, set platform.Set, prefs []decision.Preference, opts ...Option) (*v1.Affinity, error) {
	o := options{windowsHosts: platform.KnownWindowsHostBuilds()}
	for _, opt := range opts {
		opt(&o)
	}
	aff, err := mergeable(pod)
	if err != nil {
		return nil, err
	}
	na := aff.NodeAffinity
	set = podplatform.OwnConstraintOf(pod).Restrict(set)
	if !set.IsAny() {
		if set.IsEmpty() {
			return nil, ErrConflict
		}
		groups := osGroups(set, o.windowsHosts)
		existing := []v1.NodeSelectorTerm{{}}
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			existing = na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			if len(groups) > 1 {
				// A gated pod's existing terms may gain expressions but not
				// siblings (the apiserver's rule for mutable scheduling
				// directives), so one union group is ANDed in instead of one
				// term per OS: it may admit an os/arch pair no image has.
				groups = [][]v1.NodeSelectorRequirement{unionGroup(set)}
			}
		}
		var terms []v1.NodeSelectorTerm
		for _, t := range existing {
			for _, g := range groups {
				merged := *t.DeepCopy()
				merged.MatchExpressions = append(merged.MatchExpressions, g...)
				terms = append(terms, merged)
			}
		}
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: terms}
	}
	for _, pref := range prefs {
		if !set.IsAny() && set.Intersect(platform.NewSet(pref.Platform)).IsEmpty() {
			continue
		}
		term := v1.PreferredSchedulingTerm{Weight: pref.Weight, Preference: v1.NodeSelectorTerm{MatchExpressions: platformExpressions(pref.Platform.OS, []string{pref.Platform.Architecture}, nil)}}
		if !slices.ContainsFunc(na.PreferredDuringSchedulingIgnoredDuringExecution, func(t v1.PreferredSchedulingTerm) bool { return equalPreferred(t, term) }) {
			na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, term)
		}
	}
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil && len(na.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		aff.NodeAffinity = nil
	}
	if aff.NodeAffinity == nil && aff.PodAffinity == nil && aff.PodAntiAffinity == nil {
		return nil, nil
	}
	return aff, nil
}

// Unsatisfiable returns a copy of pod's affinity that no node matches: every
// required term (or a new one) gains "kubernetes.io/arch exists" and
// "kubernetes.io/arch does not exist". It is what the placement mode writes
// for a pod archfilter rejects (its images share no platform, or its own
// constraints exclude theirs), so that the pod stays Pending, as the scheduler
// plugin leaves it, and no autoscaler buys a node for it.
func Unsatisfiable(pod *v1.Pod) (*v1.Affinity, error) {
	aff, err := mergeable(pod)
	if err != nil {
		return nil, err
	}
	none := []v1.NodeSelectorRequirement{
		{Key: v1.LabelArchStable, Operator: v1.NodeSelectorOpExists},
		{Key: v1.LabelArchStable, Operator: v1.NodeSelectorOpDoesNotExist},
	}
	na := aff.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, none...)
	}
	return aff, nil
}

// mergeable returns a deep copy of pod's affinity with a node affinity to add
// to, or ErrUnmergeable when adding would change its meaning.
func mergeable(pod *v1.Pod) (*v1.Affinity, error) {
	aff := &v1.Affinity{}
	if pod.Spec.Affinity != nil {
		aff = pod.Spec.Affinity.DeepCopy()
	}
	if aff.NodeAffinity == nil {
		aff.NodeAffinity = &v1.NodeAffinity{}
	}
	if err := validate(aff.NodeAffinity); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnmergeable, err)
	}
	return aff, nil
}

// osGroups returns, per operating system of set (sorted), the expressions a
// node of that OS must match; Windows builds are chosen among windowsHosts.
func osGroups(set platform.Set, windowsHosts []string) [][]v1.NodeSelectorRequirement {
	oses := sets.New[string]()
	for _, p := range set.Platforms() {
		oses.Insert(p.OS)
	}
	var groups [][]v1.NodeSelectorRequirement
	for _, os := range sets.List(oses) {
		var builds []string
		if os == "windows" {
			builds, _ = set.WindowsHostBuilds(windowsHosts)
		}
		groups = append(groups, platformExpressions(os, set.Architectures(os), builds))
	}
	return groups
}

// unionGroup requires any OS and any architecture of set.
func unionGroup(set platform.Set) []v1.NodeSelectorRequirement {
	oses, archs := sets.New[string](), sets.New[string]()
	for _, p := range set.Platforms() {
		oses.Insert(p.OS)
		archs.Insert(p.Architecture)
	}
	return []v1.NodeSelectorRequirement{
		{Key: v1.LabelOSStable, Operator: v1.NodeSelectorOpIn, Values: sets.List(oses)},
		{Key: v1.LabelArchStable, Operator: v1.NodeSelectorOpIn, Values: sets.List(archs)},
	}
}

func platformExpressions(os string, archs, builds []string) []v1.NodeSelectorRequirement {
	exprs := []v1.NodeSelectorRequirement{
		{Key: v1.LabelOSStable, Operator: v1.NodeSelectorOpIn, Values: []string{os}},
		{Key: v1.LabelArchStable, Operator: v1.NodeSelectorOpIn, Values: archs},
	}
	if len(builds) > 0 {
		exprs = append(exprs, v1.NodeSelectorRequirement{Key: v1.LabelWindowsBuild, Operator: v1.NodeSelectorOpIn, Values: builds})
	}
	return exprs
}

func equalPreferred(a, b v1.PreferredSchedulingTerm) bool {
	if a.Weight != b.Weight || len(a.Preference.MatchFields) != 0 || len(a.Preference.MatchExpressions) != len(b.Preference.MatchExpressions) {
		return false
	}
	for i, e := range a.Preference.MatchExpressions {
		f := b.Preference.MatchExpressions[i]
		if e.Key != f.Key || e.Operator != f.Operator || !slices.Equal(e.Values, f.Values) {
			return false
		}
	}
	return true
}

// validate rejects node affinity whose meaning would change, or which the
// apiserver would refuse, once expressions are added to it: an empty
// required term list, an empty term (it matches no node; adding to it would
// make it match some), and malformed requirements.
func validate(na *v1.NodeAffinity) error {
	if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
		if len(r.NodeSelectorTerms) == 0 {
			return errors.New("requiredDuringScheduling has no nodeSelectorTerms")
		}
		for i, t := range r.NodeSelectorTerms {
			if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
				return fmt.Errorf("nodeSelectorTerms[%d] is empty (it matches no node)", i)
			}
			if err := validateTerm(t); err != nil {
				return fmt.Errorf("nodeSelectorTerms[%d]: %w", i, err)
			}
		}
	}
	for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		if err := validateTerm(t.Preference); err != nil {
			return fmt.Errorf("preferredDuringScheduling[%d]: %w", i, err)
		}
	}
	return nil
}

func validateTerm(t v1.NodeSelectorTerm) error {
	for i, e := range t.MatchExpressions {
		if err := validateRequirement(e); err != nil {
			return fmt.Errorf("matchExpressions[%d]: %w", i, err)
		}
	}
	for i, e := range t.MatchFields {
		if err := validateRequirement(e); err != nil {
			return fmt.Errorf("matchFields[%d]: %w", i, err)
		}
	}
	return nil
}

func validateRequirement(e v1.NodeSelectorRequirement) error {
	if strings.TrimSpace(e.Key) == "" {
		return errors.New("empty key")
	}
	switch e.Operator {
	case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
		if len(e.Values) == 0 {
			return fmt.Errorf("key %q: operator %s needs values", e.Key, e.Operator)
		}
	case v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist:
		if len(e.Values) != 0 {
			return fmt.Errorf("key %q: operator %s takes no values", e.Key, e.Operator)
		}
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if len(e.Values) != 1 {
			return fmt.Errorf("key %q: operator %s takes one value", e.Key, e.Operator)
		}
		if _, err := strconv.ParseInt(e.Values[0], 10, 64); err != nil {
			return fmt.Errorf("key %q: operator %s needs an integer: %w", e.Key, e.Operator, err)
		}
	default:
		return fmt.Errorf("key %q: unknown operator %q", e.Key, e.Operator)
	}
	return nil
}

// Package decision holds the rules that turn a pod into archfilter's decision:
// whether archfilter constrains the pod and why not, the platforms it may run on
// and where they came from, the platforms it prefers, the images still unknown or
// failed, and what the failure policy makes of them. It reads only what it is
// given (the pod, its namespace's labels, the settings derived from
// ArchFilterArgs and a memory-only lookup of image platforms) and does no I/O.
// The scheduler plugin, the placement mode and kubectl archfilter all call it, so
// they decide alike; none of them keeps a rule of its own.
package decision

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/platform"
)

// DefaultSchedulerName is the scheduler name archfilter's manifests and chart give
// the profile that runs ArchFilter.
const DefaultSchedulerName = "archfilter-scheduler"

// Settings are ArchFilterArgs parsed once, in the shapes the rules use.
type Settings struct {
	FailurePolicy config.FailurePolicy
	// Fallback constrains pods whose images did not resolve under failurePolicy
	// Ignore; Any when fallbackPlatforms is unset. Widened by Compat.
	Fallback platform.Set
	// MaxWait is how long a pod may wait for its images' platforms.
	MaxWait time.Duration
	// NamespaceSelector is nil when every namespace is selected.
	NamespaceSelector  labels.Selector
	ExcludedNamespaces sets.Set[string]
	// Preferences are the configured preferredPlatforms.
	Preferences     []Preference
	DaemonSetPolicy config.DaemonSetPolicy
	// ArchTaintToleration lets the scheduler's taint wrapper tolerate arch
	// taints of allowed platforms; only a scheduler can honour it.
	ArchTaintToleration bool
	// Compat is the run32BitImagesOn rule, applied to every image set (and the
	// fallback) before it is intersected or matched.
	Compat platform.Compat
	// Schedulers are the scheduler names whose profiles run the ArchFilter
	// plugin. The placement mode leaves their pods to the plugin; empty for the
	// plugin itself, which the framework hands its own pods only.
	Schedulers sets.Set[string]
	// PoliciesEnabled: ArchFilterPolicy objects are honoured
	// (ArchFilterArgs.policies.enabled).
	PoliciesEnabled bool
	// PolicyOverrides are the policy fields a policy may set
	// (ArchFilterArgs.policies.allowedOverrides).
	PolicyOverrides []config.PolicyField
	// Policy is the ArchFilterPolicy these settings carry (ForPod), within
	// the limits of PolicyOverrides; nil for the cluster's own settings.
	Policy *Policy
	// preferencesFrom names the source of Preferences when it is not
	// ArchFilterArgs (a policy's).
	preferencesFrom PreferenceSource
	// cluster are the settings WithPolicy started from; nil for them.
	cluster *Settings
}

// Preference adds weight to nodes of a platform.
type Preference struct {
	Platform platform.Platform
	Weight   int32
}

// NewSettings parses args, which must be validated; errors name the field.
func NewSettings(args *config.ArchFilterArgs) (*Settings, error) {
	s := &Settings{
		FailurePolicy:       args.FailurePolicy,
		Fallback:            platform.Any(),
		MaxWait:             args.MaxWait.Duration,
		ExcludedNamespaces:  sets.New(args.ExcludedNamespaces...),
		DaemonSetPolicy:     args.DaemonSetPolicy,
		ArchTaintToleration: args.ArchTaintToleration,
		Compat:              platform.NewCompat(args.Run32BitImagesOn...),
		PoliciesEnabled:     args.Policies.Enabled,
		PolicyOverrides:     args.Policies.AllowedOverrides,
	}
	if len(args.FallbackPlatforms) > 0 {
		set, err := s.Compat.ParseList(args.FallbackPlatforms)
		if err != nil {
			return nil, fmt.Errorf("fallbackPlatforms: %w", err)
		}
		s.Fallback = set
	}
	if sel := args.NamespaceSelector; sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
		selector, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, fmt.Errorf("namespaceSelector: %w", err)
		}
		s.NamespaceSelector = selector
	}
	for i, p := range args.PreferredPlatforms {
		pl, err := platform.Parse(p.Platform)
		if err != nil {
			return nil, fmt.Errorf("preferredPlatforms[%d]: %w", i, err)
		}
		s.Preferences = append(s.Preferences, Preference{Platform: pl, Weight: p.Weight})
	}
	return s, nil
}

// RefuseSchedulerOnly returns an error naming every field of args under path that
// only a scheduler can honour, for the front-ends that write node affinity
// instead (the placement mode): accepting such a field silently would make them
// decide unlike the plugin.
func RefuseSchedulerOnly(path *field.Path, args *config.ArchFilterArgs, front string) error {
	var errs field.ErrorList
	if args.ArchTaintToleration {
		errs = append(errs, field.Forbidden(path.Child("archTaintToleration"),
			front+" writes node affinity and cannot tolerate taints: only the scheduler's ArchAwareTaintToleration plugin honours it"))
	}
	return errs.ToAggregate()
}

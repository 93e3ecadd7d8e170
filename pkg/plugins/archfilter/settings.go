package archfilter

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/platform"
)

// settings is ArchFilterArgs parsed once, in the shapes the extension points use.
type settings struct {
	failurePolicy config.FailurePolicy
	// fallback constrains pods whose resolution failed under Ignore; Any when unset.
	fallback            platform.Set
	maxWait             time.Duration
	namespaceSelector   labels.Selector // nil selects every namespace
	excludedNamespaces  sets.Set[string]
	preferences         []preference
	daemonSetPolicy     config.DaemonSetPolicy
	archTaintToleration bool
	// compat is the run32BitImagesOn rule, applied to every image set (and the fallback)
	// before it is intersected or matched, so that Filter, PreFilter's narrowing, Score and
	// the hints all see it.
	compat platform.Compat
}

// preference adds weight to the score of nodes of a platform.
type preference struct {
	platform platform.Platform
	weight   int64
}

func newSettings(args *config.ArchFilterArgs) (*settings, error) {
	s := &settings{
		failurePolicy:       args.FailurePolicy,
		fallback:            platform.Any(),
		maxWait:             args.MaxWait.Duration,
		excludedNamespaces:  sets.New(args.ExcludedNamespaces...),
		daemonSetPolicy:     args.DaemonSetPolicy,
		archTaintToleration: args.ArchTaintToleration,
		compat:              platform.NewCompat(args.Run32BitImagesOn...),
	}
	if len(args.FallbackPlatforms) > 0 {
		set, err := s.compat.ParseList(args.FallbackPlatforms)
		if err != nil {
			return nil, fmt.Errorf("fallbackPlatforms: %w", err)
		}
		s.fallback = set
	}
	if sel := args.NamespaceSelector; sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
		selector, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, fmt.Errorf("namespaceSelector: %w", err)
		}
		s.namespaceSelector = selector
	}
	for _, p := range args.PreferredPlatforms {
		pl, err := platform.Parse(p.Platform)
		if err != nil {
			return nil, fmt.Errorf("preferredPlatforms: %w", err)
		}
		s.preferences = append(s.preferences, preference{platform: pl, weight: int64(p.Weight)})
	}
	return s, nil
}

// parsePreferences reads the per-pod override "linux/arm64=100,linux/amd64=10".
func parsePreferences(value string) ([]preference, error) {
	var prefs []preference
	for _, elem := range strings.Split(value, ",") {
		name, weight, ok := strings.Cut(strings.TrimSpace(elem), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want platform=weight", elem)
		}
		p, err := platform.Parse(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		w, err := strconv.ParseInt(strings.TrimSpace(weight), 10, 64)
		if err != nil || w < 1 || w > 100 {
			return nil, fmt.Errorf("%q: weight must be a whole number from 1 to 100", elem)
		}
		prefs = append(prefs, preference{platform: p, weight: w})
	}
	return prefs, nil
}

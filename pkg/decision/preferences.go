package decision

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/platform"
)

// PreferenceSource says where a pod's preferred platforms came from.
type PreferenceSource string

const (
	// PreferencesNone: neither the settings nor the pod prefer a platform.
	PreferencesNone PreferenceSource = ""
	// PreferencesArgs: ArchFilterArgs.preferredPlatforms.
	PreferencesArgs PreferenceSource = "preferredPlatforms"
	// PreferencesAnnotation: the pod's archfilter.io/preferred-platforms.
	PreferencesAnnotation PreferenceSource = "annotation " + annotations.PreferredPlatforms
)

// Preferred returns the platforms pod prefers: its own annotation, else its
// ArchFilterPolicy's (on the settings ForPod returns), else the configured ones. A malformed annotation is not worth failing the pod over: it
// is ignored, the configured preferences apply, and invalid says why, for the
// front-end to report.
func (s *Settings) Preferred(pod *v1.Pod) (prefs []Preference, from PreferenceSource, invalid error) {
	if value, ok := pod.Annotations[annotations.PreferredPlatforms]; ok {
		parsed, err := ParsePreferences(value)
		if err == nil {
			return parsed, PreferencesAnnotation, nil
		}
		invalid = fmt.Errorf("annotation %s: %w", annotations.PreferredPlatforms, err)
	}
	if len(s.Preferences) == 0 {
		return nil, PreferencesNone, invalid
	}
	if s.preferencesFrom != "" {
		return s.Preferences, s.preferencesFrom, invalid
	}
	return s.Preferences, PreferencesArgs, invalid
}

// ParsePreferences reads the per-pod override "linux/arm64=100,linux/amd64=10".
func ParsePreferences(value string) ([]Preference, error) {
	var prefs []Preference
	for _, elem := range strings.Split(value, ",") {
		name, weight, ok := strings.Cut(strings.TrimSpace(elem), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want platform=weight", elem)
		}
		p, err := platform.Parse(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		w, err := strconv.ParseInt(strings.TrimSpace(weight), 10, 32)
		if err != nil || w < 1 || w > 100 {
			return nil, fmt.Errorf("%q: weight must be a whole number from 1 to 100", elem)
		}
		prefs = append(prefs, Preference{Platform: p, Weight: int32(w)})
	}
	return prefs, nil
}

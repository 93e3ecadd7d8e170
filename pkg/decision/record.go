package decision

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archfilter/archfilter/apis/annotations"
)

// Outcomes of a recorded decision.
const (
	// OutcomeConstrained: node affinity requires Platforms.
	OutcomeConstrained = "constrained"
	// OutcomeUnconstrained: the images run on any platform; nothing required.
	OutcomeUnconstrained = "unconstrained"
	// OutcomeFailedOpen: images did not resolve and the pod was released
	// without a constraint (or on the fallback platforms, then Platforms says so).
	OutcomeFailedOpen = "failed-open"
	// OutcomeRejected: the pod cannot run anywhere archfilter allows; it was
	// given node affinity no node matches, so it stays Pending as the plugin
	// leaves it.
	OutcomeRejected = "rejected"
	// OutcomeNotApplied: the decision could not be written (the pod's affinity
	// cannot be merged); the pod was released without a constraint.
	OutcomeNotApplied = "not-applied"
	// OutcomeSkipped: the pod is not in archfilter's scope.
	OutcomeSkipped = "skipped"
)

// Outcome names what d does to a pod in scope: rejected, failed-open,
// unconstrained or constrained.
func (d *Decision) Outcome() string {
	switch {
	case d.Rejection != nil:
		return OutcomeRejected
	case d.FailedOpen:
		return OutcomeFailedOpen
	case d.Platforms.IsAny():
		return OutcomeUnconstrained
	}
	return OutcomeConstrained
}

// Record is a decision as a front-end that writes pods records it in the pod's
// archfilter.io/decision annotation.
type Record struct {
	// By names the component and its version.
	By string `json:"by"`
	// At is when the decision was taken.
	At metav1.Time `json:"at"`
	// Outcome is one of the Outcome* constants.
	Outcome string `json:"outcome"`
	// Platforms are the platforms the pod was allowed ("*" for any).
	Platforms string `json:"platforms,omitempty"`
	// Source says where the platforms came from.
	Source Source `json:"source,omitempty"`
	// Preferred lists the preferred platforms written, with their source.
	Preferred string `json:"preferred,omitempty"`
	// Policy names the ArchFilterPolicy that governed the decision
	// ("namespace/name").
	Policy string `json:"policy,omitempty"`
	// Message says the rest for people: unresolved images, the rejection.
	Message string `json:"message,omitempty"`
}

// Encode returns the annotation's value.
func (r Record) Encode() (string, error) {
	b, err := json.Marshal(r)
	return string(b), err
}

// RecordOf reads the decision recorded on pod; ok is false when there is none.
func RecordOf(pod *v1.Pod) (r Record, ok bool, err error) {
	value, ok := pod.Annotations[annotations.Decision]
	if !ok {
		return r, false, nil
	}
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return r, true, fmt.Errorf("annotation %s: %w", annotations.Decision, err)
	}
	return r, true, nil
}

// PreferencesString renders prefs as the annotation writes them: "linux/arm64=100,linux/amd64=10".
func PreferencesString(prefs []Preference) string {
	out := ""
	for i, p := range prefs {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprintf("%s=%d", p.Platform, p.Weight)
	}
	return out
}

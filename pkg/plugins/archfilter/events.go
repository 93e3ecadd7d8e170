package archfilter

import (
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
)

// Event reasons ArchFilter records on pods. In 1.34 a pod held at PreEnqueue
// gets no status or event from the scheduler, so these are how a person sees
// why a pod waits and what was decided.
const (
	EventResolving         = "ResolvingImagePlatforms"
	EventResolved          = "ImagePlatformsResolved"
	EventResolutionFailed  = "ImagePlatformResolutionFailed"
	EventFailOpen          = "ArchFilterFailOpen"
	EventInvalidPreference = "InvalidPlatformPreference"
	EventInvalidAnnotation = "InvalidArchFilterAnnotation"
	action                 = "Scheduling"
)

// podEvents records events through the framework's recorder, while this
// process leads: a standby resolves pending pods' images too (leader.go), but
// writes nothing; the leader records the same events. Nil-safe, so tests
// without a recorder need no stand-in.
type podEvents struct {
	recorder events.EventRecorder
	// leading is nil or says whether this process leads.
	leading func() bool
}

// record records an event and reports whether it did.
func (e podEvents) record(pod *v1.Pod, eventType, reason, note string, args ...any) bool {
	if !e.active() {
		return false
	}
	e.recorder.Eventf(pod, nil, eventType, reason, action, note, args...)
	return true
}

// active says whether events are recorded now.
func (e podEvents) active() bool {
	return e.recorder != nil && (e.leading == nil || e.leading())
}

func (e podEvents) waiting(pod *v1.Pod, pending []string) {
	e.record(pod, v1.EventTypeNormal, EventResolving, "Waiting for registries to report the platforms of %s", strings.Join(pending, ", "))
}

// resolved says which platforms the pod may run on and, in exclusions, what keeps it
// off the cluster's nodes of other platforms: the detail behind Filter's
// ReasonPlatformMismatch, which names only the pod's platforms. It reports
// whether it recorded the event.
func (e podEvents) resolved(pod *v1.Pod, set platform.Set, exclusions []string) bool {
	if set.IsAny() {
		return e.record(pod, v1.EventTypeNormal, EventResolved, "Images of %s run on any platform", strings.Join(podplatform.Images(pod), ", "))
	}
	if len(exclusions) == 0 {
		return e.record(pod, v1.EventTypeNormal, EventResolved, "Images of the pod run on %s", set.String())
	}
	return e.record(pod, v1.EventTypeNormal, EventResolved, "Images of the pod run on %s; on the cluster's other nodes: %s", set.String(), strings.Join(exclusions, "; "))
}

// explainedPods remembers, per pod, what the last ImagePlatformsResolved event
// that named exclusions was about, so that a pod gets the detail behind Filter's
// reason once, not once per scheduling cycle, and again only when it would say
// something new.
type explainedPods struct {
	mu   sync.Mutex
	pods map[types.UID]explanation
}

// explanation is what an exclusions event depends on: the pod's platforms (their
// String) and the node platforms the table had numbered (append-only, so a count
// says which).
type explanation struct {
	set       string
	platforms int
}

func newExplainedPods() *explainedPods {
	return &explainedPods{pods: map[types.UID]explanation{}}
}

// has says whether uid's pod was explained with e. It does not allocate.
func (x *explainedPods) has(uid types.UID, e explanation) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	got, ok := x.pods[uid]
	return ok && got == e
}

func (x *explainedPods) add(uid types.UID, e explanation) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.pods[uid] = e
}

// forget drops a deleted pod.
func (x *explainedPods) forget(uid types.UID) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.pods, uid)
}

func (e podEvents) rejected(pod *v1.Pod, d *decision.Decision) {
	if len(d.Failed) > 0 {
		msgs := make([]string, len(d.Failed))
		for i, err := range d.Failed {
			msgs[i] = err.Error()
		}
		e.record(pod, v1.EventTypeWarning, EventResolutionFailed, "%s", strings.Join(msgs, "; "))
	}
}

func (e podEvents) failedOpen(pod *v1.Pod, d *decision.Decision) {
	failOpen.Inc()
	constraint := "without an architecture constraint"
	if !d.Platforms.IsAny() {
		constraint = "on " + d.Platforms.String()
	}
	e.record(pod, v1.EventTypeWarning, EventFailOpen, "Scheduling %s (failurePolicy Ignore): %s", constraint, d.Unresolved())
}

// invalidAnnotation says an archfilter.io/ annotation has a value archfilter
// does not understand, and what it did instead (err says both).
func (e podEvents) invalidAnnotation(pod *v1.Pod, err error) {
	e.record(pod, v1.EventTypeWarning, EventInvalidAnnotation, "%v", err)
}

// invalidPreference says the preferred-platforms annotation was ignored (err
// names it and why).
func (e podEvents) invalidPreference(pod *v1.Pod, err error) {
	e.record(pod, v1.EventTypeWarning, EventInvalidPreference, "Ignoring %v", err)
}

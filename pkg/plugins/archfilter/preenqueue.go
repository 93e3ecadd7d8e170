package archfilter

import (
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// ReasonWaiting is PreEnqueue's reason while a pod's images resolve.
const ReasonWaiting = "waiting for the platforms of the pod's images to be resolved"

// ReasonWaitingForGang is PreEnqueue's reason for a gang member whose images
// are known while another member's still resolve: the gang is released together.
const ReasonWaitingForGang = "waiting for the platforms of the images of the other pods of its gang to be resolved"

// slowWait is how long a pod waits before an event tells people why.
const slowWait = 3 * time.Second

// PreEnqueue admits a pod whose images all have a cached answer. Otherwise it
// starts resolving the missing ones on the resolver's workers and holds the
// pod; a resolver callback or the maxWait timer releases it with Activate.
// It only reads memory and never blocks: it runs under the queue's lock.
//
// The shipped configurations name ArchFilter under preEnqueue, so it runs
// before the default PreEnqueue plugins: a pod's images are asked for the
// moment the pod is seen, even while another plugin turns it away
// (SchedulingGates; GangScheduling until its gang's quorum exists), and a
// standby, whose queue runs PreEnqueue too, learns them as well.
func (pl *ArchFilter) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	pl.lintAnnotations(pod)
	switch pl.scope.skipReason(pod) {
	case "":
	case decision.SkipDaemonSet:
		pl.held.release(pod.UID, releaseOutOfScope)
		pl.checkDaemonSetPod(pod)
		return nil
	default:
		// A held pod may have left scope through an update.
		pl.held.release(pod.UID, releaseOutOfScope)
		return nil
	}
	if decision.Declared(pod) {
		pl.held.release(pod.UID, releaseOutOfScope)
		return nil
	}
	creds := pl.credentials.ForPod(pod)
	lookup := pl.lookup(creds)
	if len(pod.Spec.SchedulingGates) > 0 {
		// Another scheduling gate keeps the pod out of the queue (the
		// SchedulingGates plugin turns it away after this one: the shipped
		// configurations run ArchFilter first at PreEnqueue). Its images are
		// fetched meanwhile, so they are known when the gate is removed;
		// nothing is held (gates are only ever removed, so a gated pod was
		// never held), nothing waits for the answers.
		for _, image := range decision.Unknown(pod, lookup) {
			pl.resolver.ResolveAsync(request(image, creds), ignoreAnswer)
		}
		return nil
	}
	if decision.AllKnown(pod, lookup) {
		if key := gangKey(pod); key != "" && !pl.gangReady(key, pod) && pl.held.hold(pod, pl.settings.MaxWait) {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ReasonWaitingForGang)
		}
		pl.held.release(pod.UID, releaseResolved)
		return nil
	}
	if !pl.held.hold(pod, pl.settings.MaxWait) {
		// maxWait is over: admit, and PreFilter applies the failure policy to
		// whatever is still unknown.
		pl.held.release(pod.UID, releaseTimeout)
		return nil
	}
	missing := decision.Unknown(pod, lookup)
	// Every image is marked in flight before the first request goes out: a
	// fast worker's callback must not find the pod with nothing in flight
	// while another of its images has yet to be dispatched.
	for _, image := range pl.held.dispatch(pod.UID, missing) {
		klog.FromContext(ctx).V(4).Info("Resolving image platforms", "pod", klog.KObj(pod), "image", image)
		pl.resolver.ResolveAsync(request(image, creds), func(resolver.Result) { pl.held.resolved(pod, image) })
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ReasonWaiting)
}

// lintAnnotations records an InvalidArchFilterAnnotation warning event for each
// mistake package decision finds in the pod's archfilter.io/ annotations (an unknown
// key, a skip value that is no boolean, platforms no runtime knows), as the placement
// mode's admission warnings and kubectl archfilter check say them. The values the
// plugin cannot read are reported where it reads them, as before: a declaration by
// PreFilter's rejection (FailedScheduling), a preference by PreScore's
// InvalidPlatformPreference.
func (pl *ArchFilter) lintAnnotations(pod *v1.Pod) {
	for _, f := range decision.LintAnnotations(pod.Annotations) {
		if f.Kind == decision.FindingInvalidValue && f.Annotation != annotations.Skip {
			continue
		}
		pl.events.invalidAnnotation(pod, errors.New(f.Message))
	}
}

// gangReady reports whether every other unscheduled member of the gang key
// that ArchFilter resolves has all its images known. The images not known yet
// are resolved now (a member still gated by another scheduling gate never
// reached its own PreEnqueue), and pod is activated, with its gang, as each
// answer arrives. Memory only: the requests go to the resolver's workers.
func (pl *ArchFilter) gangReady(key string, pod *v1.Pod) bool {
	ready := true
	for _, m := range pl.gangs.members(key, pod) {
		if pl.scope.skipReason(m) != "" || decision.Declared(m) {
			continue
		}
		creds := pl.credentials.ForPod(m)
		for _, image := range decision.Unknown(m, pl.lookup(creds)) {
			ready = false
			pl.resolver.ResolveAsync(request(image, creds), func(resolver.Result) {
				pl.activate(map[string]*v1.Pod{podKey(pod): pod})
			})
		}
	}
	return ready
}

// ignoreAnswer is the callback of a fetch nobody waits for: the answer goes to
// the resolver's cache.
func ignoreAnswer(resolver.Result) {}

// releaseReason labels the pods_released metric.
type releaseReason string

const (
	releaseResolved releaseReason = "resolved"
	releaseTimeout  releaseReason = "timeout"
	releaseDeleted  releaseReason = "deleted"
	// releaseOutOfScope: the pod was updated to opt out or declare platforms.
	releaseOutOfScope releaseReason = "out_of_scope"
)

// heldPods tracks pods PreEnqueue is holding back, and makes sure every one of
// them is released: the scheduler's periodic flush skips pods rejected at
// PreEnqueue, so a pod we forget would wait forever.
type heldPods struct {
	clock    clock.WithDelayedExecution
	activate func(map[string]*v1.Pod)
	// onSlow is called (outside the lock) for a pod still held after slowWait.
	onSlow func(pod *v1.Pod, pending []string)
	// onResolved is called (outside the lock) when a held pod's images resolved.
	onResolved func(pod *v1.Pod)
	// onDeleted is called when a pod is deleted, held or not.
	onDeleted func(uid types.UID)

	mu      sync.Mutex
	pods    map[types.UID]*heldPod
	retries map[types.UID]clock.Timer
	stopped bool
}

type heldPod struct {
	pod      *v1.Pod
	since    time.Time
	expired  bool // maxWait passed: the next PreEnqueue admits the pod
	timers   []clock.Timer
	inFlight sets.Set[string]
}

func newHeldPods(c clock.WithDelayedExecution, activate func(map[string]*v1.Pod)) *heldPods {
	return &heldPods{
		clock:      c,
		activate:   activate,
		onSlow:     func(*v1.Pod, []string) {},
		onResolved: func(*v1.Pod) {},
		onDeleted:  func(types.UID) {},
		pods:       map[types.UID]*heldPod{},
		retries:    map[types.UID]clock.Timer{},
	}
}

// hold records pod as held and returns true, or returns false when the pod has
// already been held for maxWait.
func (h *heldPods) hold(pod *v1.Pod, maxWait time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.pods[pod.UID]; ok {
		e.pod = pod
		return !e.expired
	}
	e := &heldPod{pod: pod, since: h.clock.Now(), inFlight: sets.New[string]()}
	h.pods[pod.UID] = e
	uid := pod.UID
	e.timers = append(e.timers,
		h.clock.AfterFunc(maxWait, func() { h.expire(uid) }),
		h.clock.AfterFunc(min(slowWait, maxWait/2), func() { h.slow(uid) }))
	podsHeld.Inc()
	return true
}

// dispatch marks images as being resolved for the pod, all under one lock,
// and returns those that were not already in flight.
func (h *heldPods) dispatch(uid types.UID, images []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.pods[uid]
	if !ok {
		return nil
	}
	var out []string
	for _, image := range images {
		if !e.inFlight.Has(image) {
			e.inFlight.Insert(image)
			out = append(out, image)
		}
	}
	return out
}

// isHeld reports whether the pod is held and its maxWait has not passed.
func (h *heldPods) isHeld(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.pods[uid]
	return ok && !e.expired
}

// resolved is the resolver callback: once nothing is in flight for the pod it
// goes back to the active queue, where PreEnqueue finds its answers cached.
func (h *heldPods) resolved(pod *v1.Pod, image string) {
	h.mu.Lock()
	if e, ok := h.pods[pod.UID]; ok {
		e.inFlight.Delete(image)
		if e.inFlight.Len() > 0 {
			h.mu.Unlock()
			return
		}
		pod = e.pod
	}
	stopped := h.stopped
	h.mu.Unlock()
	if !stopped {
		h.onResolved(pod)
	}
	// Without an entry the pod may have been admitted after maxWait and
	// rejected by PreFilter; activating it lets it use the answer now.
	if !stopped {
		h.activate(map[string]*v1.Pod{podKey(pod): pod})
	}
}

func (h *heldPods) expire(uid types.UID) {
	h.mu.Lock()
	e, ok := h.pods[uid]
	var pod *v1.Pod
	if ok {
		e.expired = true
		pod = e.pod
	}
	stopped := h.stopped
	h.mu.Unlock()
	if ok && !stopped {
		h.activate(map[string]*v1.Pod{podKey(pod): pod})
	}
}

func (h *heldPods) slow(uid types.UID) {
	h.mu.Lock()
	e, ok := h.pods[uid]
	var pending []string
	var pod *v1.Pod
	if ok && !e.expired && e.inFlight.Len() > 0 {
		pending, pod = sets.List(e.inFlight), e.pod
	}
	h.mu.Unlock()
	if pod != nil {
		h.onSlow(pod, pending)
	}
}

// release forgets a held pod and records how long it waited.
func (h *heldPods) release(uid types.UID, reason releaseReason) {
	h.mu.Lock()
	e, ok := h.pods[uid]
	if ok {
		delete(h.pods, uid)
		for _, t := range e.timers {
			t.Stop()
		}
	}
	h.mu.Unlock()
	if ok {
		podsReleased.WithLabelValues(string(reason)).Inc()
		podWaitSeconds.Observe(h.clock.Since(e.since).Seconds())
	}
}

// retryAt activates pod at t, once; used to retry resolution under the Fail
// policy when the cached failure expires.
func (h *heldPods) retryAt(pod *v1.Pod, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.retries[pod.UID]; ok || h.stopped {
		return
	}
	uid := pod.UID
	h.retries[uid] = h.clock.AfterFunc(max(t.Sub(h.clock.Now()), time.Second), func() {
		h.mu.Lock()
		delete(h.retries, uid)
		stopped := h.stopped
		h.mu.Unlock()
		if !stopped {
			h.activate(map[string]*v1.Pod{podKey(pod): pod})
		}
	})
}

// forgetDeletedPods drops state for pods deleted while held or retrying.
func (h *heldPods) forgetDeletedPods(informer cache.SharedIndexInformer) error {
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			pod, ok := obj.(*v1.Pod)
			if !ok {
				return
			}
			h.release(pod.UID, releaseDeleted)
			h.onDeleted(pod.UID)
			h.mu.Lock()
			if t, ok := h.retries[pod.UID]; ok {
				t.Stop()
				delete(h.retries, pod.UID)
			}
			h.mu.Unlock()
		},
	})
	return err
}

// stop ends every timer; the scheduler is shutting down.
func (h *heldPods) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	for _, e := range h.pods {
		for _, t := range e.timers {
			t.Stop()
		}
	}
	for _, t := range h.retries {
		t.Stop()
	}
}

// heldCount is the number of pods currently held (for tests and metrics).
func (h *heldPods) heldCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.pods)
}

func podKey(pod *v1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}

// Package heal is the placement companion's watch on bound pods (opt-in,
// --misplaced): it finds, with package misplaced, pods already running on a node
// that cannot run them, records an event on each and a gauge, and in evict mode
// evicts those a controller recreates (through the Eviction API, so PodDisruption-
// Budgets hold, at a bounded rate) so that the webhook and the placement
// controller, or the archfilter scheduler, place the replacement.
package heal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/archfilter/archfilter/internal/placement/metrics"
	"github.com/archfilter/archfilter/internal/placement/podimages"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/misplaced"
	"github.com/archfilter/archfilter/pkg/platform"
)

// Mode is --misplaced.
type Mode string

const (
	// ModeOff: bound pods are not watched.
	ModeOff Mode = "off"
	// ModeReport: misplaced pods get an event and are counted.
	ModeReport Mode = "report"
	// ModeEvict: and those a controller recreates elsewhere are evicted.
	ModeEvict Mode = "evict"
)

// ParseMode reads --misplaced.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeOff, ModeReport, ModeEvict:
		return m, nil
	}
	return "", fmt.Errorf("--misplaced %q: want %s, %s or %s", s, ModeOff, ModeReport, ModeEvict)
}

// Event reasons on the pod.
const (
	// ReasonMisplaced: the pod is on a node that cannot run it.
	ReasonMisplaced = "ArchFilterMisplaced"
	// ReasonEvicted: the companion evicted it.
	ReasonEvicted = "ArchFilterMisplacedEvicted"
	// ReasonEvictionBlocked: a PodDisruptionBudget refused the eviction for now.
	ReasonEvictionBlocked = "ArchFilterMisplacedEvictionBlocked"
	// ReasonNote: what was learnt about a bound pod that is not a finding: its
	// tag moved to an image without the node's platform, or the image it runs
	// cannot be read.
	ReasonNote = "ArchFilterMisplacedNote"
)

const (
	// resolveTimeout bounds the resolution of one pod's images.
	resolveTimeout = 30 * time.Second
	// blockedRetry is when an eviction a PodDisruptionBudget refused is tried again.
	blockedRetry = 30 * time.Second
	retryBase    = time.Second
	retryMax     = 5 * time.Minute
	// defaultNegativeTTL is Options.NegativeTTL's default.
	defaultNegativeTTL = 30 * time.Second
	// notPlacedRetry is when a pod whose replacement nothing would place is
	// checked again (the webhook may serve by then).
	notPlacedRetry = 30 * time.Second
)

// Options configure the watch.
type Options struct {
	Client kubernetes.Interface
	// Informers is started by the caller after New; New registers pods and
	// nodes informers in it (pods: list, watch; nodes: list, watch).
	Informers   informers.SharedInformerFactory
	Resolver    podimages.Resolver
	Credentials podimages.Credentials
	Recorder    record.EventRecorder
	Settings    *decision.Settings
	Namespaces  decision.NamespaceLabels
	// Mode is ModeReport or ModeEvict.
	Mode Mode
	// EvictionsPerMinute bounds evictions (a burst of one); must be positive
	// in ModeEvict.
	EvictionsPerMinute float64
	// ReplacementPlaced says whether archfilter would place pod's replacement
	// now, and if not why; nil means it always would. The placement mode
	// answers from its webhook (a replacement admitted ungated would be placed
	// blindly), heal-only mode from the pod's scheduler. A pod it refuses is
	// reported and checked again after notPlacedRetry.
	ReplacementPlaced func(pod *v1.Pod) (ok bool, why string)
	// NegativeTTL is how long a failed resolution is kept (cache.negativeTTL;
	// 0 means 30s), by this watch's resolver and by the scheduler's or the
	// placement controller's. A pod whose images did not resolve is checked
	// again after it: sooner learns nothing, later leaves a pod that a
	// registry outage hid misplaced longer than the outage. And a replacement
	// of a pod this watch evicted, placed where it cannot run again (its
	// scheduler still serving the outage's failure, under failurePolicy
	// Ignore), is evicted again only NegativeTTL after that eviction, when the
	// failure has expired: sooner would only repeat the blind placement.
	NegativeTTL time.Duration
}

// Healer watches bound pods.
type Healer struct {
	opts    Options
	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	synced  []cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
	limiter *rate.Limiter

	mu sync.Mutex
	// found holds, per pod key, the UID and the kinds found, for the gauge and
	// so that each pod gets its event once.
	found map[string]podState
	// evicted holds, per controller UID, when this watch last evicted one of
	// its pods (entries older than NegativeTTL are dropped).
	evicted map[types.UID]time.Time
}

type podState struct {
	uid   types.UID
	kinds map[misplaced.Kind]bool
	// notes are the kinds of note already reported, and notEvicted the reason
	// already counted, for this UID.
	notes      map[misplaced.NoteKind]bool
	notEvicted misplaced.NotEvicted
}

// New registers the informers; call Run after starting opts.Informers.
func New(opts Options) (*Healer, error) {
	if opts.Mode != ModeReport && opts.Mode != ModeEvict {
		return nil, fmt.Errorf("mode %q: want %s or %s", opts.Mode, ModeReport, ModeEvict)
	}
	if opts.Mode == ModeEvict && opts.EvictionsPerMinute <= 0 {
		return nil, fmt.Errorf("evictions per minute %v: must be positive", opts.EvictionsPerMinute)
	}
	if opts.Settings == nil {
		return nil, errors.New("no settings")
	}
	if opts.NegativeTTL <= 0 {
		opts.NegativeTTL = defaultNegativeTTL
	}
	metrics.Register()
	h := &Healer{
		opts:    opts,
		found:   map[string]podState{},
		evicted: map[types.UID]time.Time{},
		limiter: rate.NewLimiter(rate.Limit(opts.EvictionsPerMinute/60), 1),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryBase, retryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "archfilter-misplaced"}),
	}
	podInformer := opts.Informers.Core().V1().Pods()
	nodeInformer := opts.Informers.Core().V1().Nodes()
	h.pods, h.nodes = podInformer.Lister(), nodeInformer.Lister()
	h.synced = []cache.InformerSynced{podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced}
	_, err := podInformer.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			pod, ok := obj.(*v1.Pod)
			return ok && pod.Spec.NodeName != ""
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    h.enqueue,
			UpdateFunc: func(_, obj any) { h.enqueue(obj) },
			DeleteFunc: h.enqueue,
		},
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (h *Healer) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	h.queue.Add(key)
}

// Run checks bound pods until ctx is done: the caller runs it while leading.
func (h *Healer) Run(ctx context.Context) error {
	defer h.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), h.synced...) {
		return errors.New("pods and nodes informers did not sync")
	}
	klog.FromContext(ctx).Info("Watching bound pods for misplaced ones", "mode", h.opts.Mode, "evictionsPerMinute", h.opts.EvictionsPerMinute)
	go wait.UntilWithContext(ctx, h.worker, time.Second)
	<-ctx.Done()
	return nil
}

func (h *Healer) worker(ctx context.Context) {
	for h.processNext(ctx) {
	}
}

func (h *Healer) processNext(ctx context.Context) bool {
	key, quit := h.queue.Get()
	if quit {
		return false
	}
	defer h.queue.Done(key)
	retryAfter, err := h.sync(ctx, key)
	switch {
	case err != nil:
		utilruntime.HandleErrorWithContext(ctx, err, "Checking bound pod", "pod", key)
		h.queue.AddRateLimited(key)
	case retryAfter > 0:
		h.queue.AddAfter(key, retryAfter)
	default:
		h.queue.Forget(key)
	}
	return true
}

// sync checks one pod: it records what was found, reports it once, and in
// evict mode evicts the pod when that places it again elsewhere.
func (h *Healer) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := h.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		h.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		h.forget(key)
		return 0, nil
	}
	node, err := h.nodes.Get(pod.Spec.NodeName)
	if err != nil {
		node = nil // a node not (yet) known: only the containers' errors count
	}
	var lookup decision.Lookup
	if node != nil && misplaced.ReadsImages(h.opts.Settings, pod, h.opts.Namespaces) {
		lookup = h.resolve(ctx, pod)
	}
	r := misplaced.Find(h.opts.Settings, misplaced.Input{Pod: pod, Node: node, Lookup: lookup, Namespaces: h.opts.Namespaces,
		ClusterPlatforms: h.clusterPlatforms})
	for _, n := range h.newNotes(key, pod, r.Notes) {
		h.opts.Recorder.Eventf(pod, v1.EventTypeNormal, ReasonNote, "%s: container %q (%s): %s", n.Kind, n.Container, n.Image, n.Text)
	}
	if len(r.Findings) == 0 {
		h.clear(key)
		if len(r.Unresolved) > 0 {
			// Judged again later, when the resolver's cached failures may have
			// expired; quietly: the placement controller reports resolution errors.
			klog.FromContext(ctx).V(4).Info("Images of a bound pod not resolved; checked again later", "pod", klog.KObj(pod), "images", r.Unresolved, "after", h.opts.NegativeTTL)
			return h.opts.NegativeTTL, nil
		}
		return 0, nil
	}
	reason, why := h.evictable(pod, r)
	if h.record(key, pod, r, reason) {
		h.opts.Recorder.Event(pod, v1.EventTypeWarning, ReasonMisplaced, message(r, reason, why))
	}
	switch {
	case h.opts.Mode != ModeEvict:
		return 0, nil
	case reason == misplaced.NotEvictedNotPlaced:
		return notPlacedRetry, nil
	case reason != "":
		return 0, nil
	}
	if wait := h.evictedRecently(pod, time.Now()); wait > 0 {
		klog.FromContext(ctx).V(2).Info("Replacement of an evicted pod misplaced again: evicted again once the failures that placed it blind have expired",
			"pod", klog.KObj(pod), "node", pod.Spec.NodeName, "after", wait)
		return wait, nil
	}
	return h.evict(ctx, pod)
}

// evictedRecently says how long to wait before evicting pod: until
// NegativeTTL after this watch evicted a pod of the same controller, when pod
// was created after that eviction (its replacement, or a later one); 0 for
// any other pod, such as a sibling that existed before.
func (h *Healer) evictedRecently(pod *v1.Pod, now time.Time) time.Duration {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.evicted[ref.UID]
	// The creation time has whole seconds.
	if !ok || pod.CreationTimestamp.Time.Before(at.Truncate(time.Second)) {
		return 0
	}
	return max(0, at.Add(h.opts.NegativeTTL).Sub(now))
}

// noteEviction records that a pod of pod's controller was evicted at now.
func (h *Healer) noteEviction(pod *v1.Pod, now time.Time) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for uid, at := range h.evicted {
		if now.Sub(at) > h.opts.NegativeTTL {
			delete(h.evicted, uid)
		}
	}
	h.evicted[ref.UID] = now
}

// evictable is Report.Evictable, and then whether archfilter would place the
// replacement now.
func (h *Healer) evictable(pod *v1.Pod, r misplaced.Report) (misplaced.NotEvicted, string) {
	reason, why := r.Evictable(pod)
	if reason != "" || h.opts.ReplacementPlaced == nil {
		return reason, why
	}
	if ok, why := h.opts.ReplacementPlaced(pod); !ok {
		return misplaced.NotEvictedNotPlaced, why
	}
	return "", ""
}

// resolve asks the registries for the platforms of pod's images and of the
// digests its containers run (the resolver caches its answers) and returns
// them as a lookup.
func (h *Healer) resolve(ctx context.Context, pod *v1.Pod) decision.Lookup {
	rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	return podimages.ResolveRefs(rctx, h.opts.Resolver, h.opts.Credentials, pod, misplaced.Images(pod))
}

// clusterPlatforms lists the distinct platforms of the nodes the informer
// holds, for telling whether an evicted pod's replacement finds a node.
func (h *Healer) clusterPlatforms() []platform.NodePlatform {
	nodes, err := h.nodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	return platform.DistinctNodePlatforms(nodes)
}

// message is the event's text: the node, each finding, and what the companion
// does about it.
func message(r misplaced.Report, reason misplaced.NotEvicted, why string) string {
	var parts []string
	for _, f := range r.Findings {
		parts = append(parts, string(f.Kind)+": "+f.Evidence)
	}
	f := r.Findings[0]
	msg := fmt.Sprintf("node %s (%s) cannot run this pod: %s", f.Node, f.NodePlatform, strings.Join(parts, "; "))
	if reason != "" {
		msg += "; not evicted (" + string(reason) + "): " + why
	}
	return msg
}

// record notes what was found on pod and updates the gauge, and counts, once
// per pod, why eviction would not heal it; it reports whether the pod (this
// UID) has a kind of finding it had not, and so needs an event.
func (h *Healer) record(key string, pod *v1.Pod, r misplaced.Report, notEvicted misplaced.NotEvicted) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.found[key]
	if old.uid != pod.UID {
		old = podState{}
	}
	st := podState{uid: pod.UID, kinds: map[misplaced.Kind]bool{}, notes: old.notes, notEvicted: notEvicted}
	news := false
	for _, f := range r.Findings {
		st.kinds[f.Kind] = true
		news = news || !old.kinds[f.Kind]
	}
	if notEvicted != "" && notEvicted != old.notEvicted {
		metrics.MisplacedNotEvicted.WithLabelValues(string(notEvicted)).Inc()
	}
	h.found[key] = st
	h.updateGauge()
	return news
}

// newNotes returns the notes of kinds not yet reported for pod (this UID).
func (h *Healer) newNotes(key string, pod *v1.Pod, notes []misplaced.Note) []misplaced.Note {
	if len(notes) == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.found[key]
	if st.uid != pod.UID {
		st = podState{uid: pod.UID}
	}
	if st.notes == nil {
		st.notes = map[misplaced.NoteKind]bool{}
	}
	var out []misplaced.Note
	for _, n := range notes {
		if !st.notes[n.Kind] {
			st.notes[n.Kind] = true
			out = append(out, n)
		}
	}
	h.found[key] = st
	return out
}

// clear drops what was found on a pod that has no finding now, keeping the
// notes already reported on it.
func (h *Healer) clear(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, ok := h.found[key]
	if !ok {
		return
	}
	if len(st.notes) == 0 {
		delete(h.found, key)
	} else {
		h.found[key] = podState{uid: st.uid, notes: st.notes}
	}
	h.updateGauge()
}

// forget drops everything about a pod that is gone or done.
func (h *Healer) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.found[key]; ok {
		delete(h.found, key)
		h.updateGauge()
	}
}

// updateGauge sets misplaced_pods per kind; h.mu is held.
func (h *Healer) updateGauge() {
	counts := map[misplaced.Kind]int{}
	for _, st := range h.found {
		for k := range st.kinds {
			counts[k]++
		}
	}
	for _, k := range misplaced.Kinds {
		metrics.MisplacedPods.WithLabelValues(string(k)).Set(float64(counts[k]))
	}
}

// evict evicts pod through the Eviction API when the rate limit allows, and
// says when to come back: at the limiter's next slot, or later when a
// PodDisruptionBudget refused it (the eviction is never forced).
func (h *Healer) evict(ctx context.Context, pod *v1.Pod) (time.Duration, error) {
	res := h.limiter.Reserve()
	if d := res.Delay(); d > 0 {
		res.Cancel()
		return d, nil
	}
	logger := klog.FromContext(ctx)
	err := h.opts.Client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	})
	switch {
	case err == nil:
		h.noteEviction(pod, time.Now())
		metrics.MisplacedEvictions.WithLabelValues(metrics.EvictionEvicted).Inc()
		logger.Info("Evicted misplaced pod", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
		h.opts.Recorder.Eventf(pod, v1.EventTypeNormal, ReasonEvicted, "evicted from node %s, which cannot run it, so that its controller recreates it and archfilter places it", pod.Spec.NodeName)
		return 0, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return 0, nil // gone, or another pod of the same name
	case apierrors.IsTooManyRequests(err):
		// A PodDisruptionBudget allows no disruption now: the slot is given back.
		res.Cancel()
		metrics.MisplacedEvictions.WithLabelValues(metrics.EvictionBlocked).Inc()
		h.opts.Recorder.Eventf(pod, v1.EventTypeWarning, ReasonEvictionBlocked, "eviction refused for now, retried in %s: %v", blockedRetry, err)
		return blockedRetry, nil
	}
	metrics.MisplacedEvictions.WithLabelValues(metrics.EvictionFailed).Inc()
	return 0, fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

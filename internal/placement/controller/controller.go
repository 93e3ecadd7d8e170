// Package controller is the placement mode's controller: for every pod
// carrying the archfilter.io/placement gate it resolves the pod's images,
// writes the required and preferred node affinity, and removes the gate, in
// one update. Whatever happens, the gate goes within a bounded time.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/internal/placement/metrics"
	"github.com/archfilter/archfilter/internal/placement/podimages"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/placement"
	"github.com/archfilter/archfilter/pkg/platform"
)

// Event reasons on the pod.
const (
	ReasonPlaced      = "ArchFilterPlacement"
	ReasonFailedOpen  = "ArchFilterPlacementFailedOpen"
	ReasonRejected    = "ArchFilterPlacementRejected"
	ReasonUnmergeable = "ArchFilterPlacementUnmergeable"
	ReasonGateRemoved = "ArchFilterPlacementGateRemoved"
	// ReasonInvalidPreference is the plugin's reason for an ignored
	// archfilter.io/preferred-platforms annotation.
	ReasonInvalidPreference = "InvalidPlatformPreference"
	minResolveWindow        = 5 * time.Second
	retryBackoffBase        = time.Second
	retryBackoffMax         = 30 * time.Second
	// windowsSyncWait bounds how long Run waits for the Windows nodes: their
	// builds only add to the known ones, so without the permission to list
	// nodes the controller starts late, not never.
	windowsSyncWait = 10 * time.Second
)

// Options configure the controller.
type Options struct {
	Client kubernetes.Interface
	// Informers is started by the caller after New, which registers the
	// pods informer in it.
	Informers informers.SharedInformerFactory
	// WindowsNodes is an informer on the Windows nodes only (nodes: list,
	// watch), from a factory of its own (NewWindowsNodesFactory), also started
	// by the caller. Not the shared factory's: a factory holds one informer
	// per type, and the misplaced-pod watch needs every node from it.
	WindowsNodes coreinformers.NodeInformer
	Resolver     podimages.Resolver
	Credentials  podimages.Credentials
	Recorder     record.EventRecorder
	// Settings are the plugin's rules (package decision) from the same
	// ArchFilterArgs: scope, failurePolicy, maxWait, fallbackPlatforms,
	// preferredPlatforms, run32BitImagesOn.
	Settings *decision.Settings
	// Namespaces gives a namespace's labels, for the namespace selector.
	Namespaces decision.NamespaceLabels
	// Policies reads the ArchFilterPolicy objects (pkg/policystore); nil
	// without policies.
	Policies decision.PolicyLookup
	// By names this component and its version in the decisions it records.
	By string
	// MaxGated is the longest a pod keeps the gate, counted from its creation.
	MaxGated time.Duration
	Workers  int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Controller removes placement gates.
type Controller struct {
	opts        Options
	pods        corelisters.PodLister
	synced      cache.InformerSynced
	windows     corelisters.NodeLister
	windowsSync cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	podInformer cache.SharedIndexInformer
}

// New builds the controller; call Run after starting opts.Informers.
func New(opts Options) (*Controller, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.MaxGated <= 0 {
		return nil, fmt.Errorf("max gated time %v: must be positive", opts.MaxGated)
	}
	if opts.Settings == nil {
		return nil, errors.New("no settings")
	}
	if opts.WindowsNodes == nil {
		return nil, errors.New("no informer on the Windows nodes")
	}
	metrics.Register()
	c := &Controller{
		opts: opts,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryBackoffBase, retryBackoffMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "archfilter-placement"}),
	}
	// The Windows nodes only (a label selector on the watch): their builds
	// join the known ones in the windows-build expression.
	c.windows, c.windowsSync = opts.WindowsNodes.Lister(), opts.WindowsNodes.Informer().HasSynced
	podInformer := opts.Informers.Core().V1().Pods()
	c.pods = podInformer.Lister()
	c.podInformer = podInformer.Informer()
	c.synced = c.podInformer.HasSynced
	if _, err := c.podInformer.AddEventHandler(gatedPods(c.queue)); err != nil {
		return nil, err
	}
	return c, nil
}

// gatedPods is an event handler that adds the key of every gated pod added
// or updated to queue.
func gatedPods(queue workqueue.TypedInterface[string]) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		queue.Add(key)
	}
	return cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			pod, ok := obj.(*v1.Pod)
			return ok && placement.HasGate(pod)
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
			UpdateFunc: func(_, obj any) { enqueue(obj) },
		},
	}
}

// NewWindowsNodesFactory is a factory whose node informer watches only the
// nodes labelled kubernetes.io/os=windows, so its cache holds a handful of
// nodes, not the cluster's: Options.WindowsNodes is its Core().V1().Nodes().
func NewWindowsNodesFactory(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = labels.Set{v1.LabelOSStable: "windows"}.String()
	}))
}

// windowsHostBuilds returns the node.kubernetes.io/windows-build values of the
// cluster's Windows nodes, or nil while their informer has not synced (or
// cannot list nodes): the known builds alone then apply, and pods are not
// held up for what is an addition to them.
func (c *Controller) windowsHostBuilds() []string {
	if !c.windowsSync() {
		return nil
	}
	nodes, err := c.windows.List(labels.Everything())
	if err != nil {
		return nil
	}
	var builds []string
	for _, n := range nodes {
		if np, ok := platform.FromNode(n); ok && np.WindowsBuild != "" {
			builds = append(builds, np.WindowsBuild)
		}
	}
	return builds
}

// Run processes gated pods until ctx is done. Pods gated while no controller
// ran are listed by the informer at start and handled like new ones.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return errors.New("pod informer did not sync")
	}
	wctx, cancel := context.WithTimeout(ctx, windowsSyncWait)
	if !cache.WaitForCacheSync(wctx.Done(), c.windowsSync) {
		klog.FromContext(ctx).Info("Windows nodes not listed yet; Windows images get the known Windows builds only until they are", "knownBuilds", platform.KnownWindowsHostBuilds())
	}
	cancel()
	for range c.opts.Workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	return nil
}

// Warm is a standby's share of the work (--hot-standby): until ctx is done
// (the replica leads, or stops), it resolves the images of every gated pod
// as sync would, with the pod's credentials, within the same bounded wait
// and retrying unresolved ones on the same schedule until --max-gated, so
// that the resolver's cache holds the answers when this replica's Run
// starts. It writes nothing to the cluster: no pod update, no event, no
// metric of the controller's own (the resolver counts its requests). Its
// queue is its own, fed by an event handler it removes when it returns, which
// it does once its workers have stopped.
func (c *Controller) Warm(ctx context.Context) error {
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryBackoffBase, retryBackoffMax),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "archfilter-placement-standby"})
	defer queue.ShutDown()
	reg, err := c.podInformer.AddEventHandler(gatedPods(queue))
	if err != nil {
		return err
	}
	defer func() { _ = c.podInformer.RemoveEventHandler(reg) }()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return ctx.Err()
	}
	klog.FromContext(ctx).Info("Standby: resolving the images of gated pods until this replica leads", "workers", c.opts.Workers)
	var workers sync.WaitGroup
	for range c.opts.Workers {
		workers.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for c.warmNext(ctx, queue) {
				}
			}, time.Second)
		})
	}
	<-ctx.Done()
	// Returns once no worker resolves any more: the caller's controller then
	// runs alone.
	queue.ShutDown()
	workers.Wait()
	return nil
}

func (c *Controller) warmNext(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string]) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	if retry := c.warm(ctx, key); retry > 0 {
		queue.AddAfter(key, retry)
	} else {
		queue.Forget(key)
	}
	return true
}

// warm resolves one gated pod's images, as decide does, and says when to
// try again: as decide would keep the pod gated, while its images do not
// resolve and --max-gated is not reached.
func (c *Controller) warm(ctx context.Context, key string) time.Duration {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if err != nil || !placement.HasGate(pod) || pod.DeletionTimestamp != nil {
		return 0
	}
	s := c.opts.Settings.ForPod(pod, c.opts.Policies)
	if s.Scope(pod, decision.ViaPlacement, c.opts.Namespaces) != "" || decision.Declared(pod) {
		return 0 // the leader asks no registry for it either
	}
	now := c.opts.Now()
	deadline := pod.CreationTimestamp.Add(c.opts.MaxGated)
	if !now.Before(deadline) {
		return 0
	}
	d := s.Decide(pod, c.resolve(ctx, pod, deadline))
	if r := d.Rejection; r != nil && r.Kind == decision.RejectResolutionFailed {
		return min(retryBackoffMax, max(retryBackoffBase, deadline.Sub(now)))
	}
	klog.FromContext(ctx).V(4).Info("Standby resolved a gated pod's images", "pod", klog.KObj(pod))
	return 0
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	retryAfter, err := c.sync(ctx, key)
	switch {
	case err != nil:
		utilruntime.HandleErrorWithContext(ctx, err, "Placing pod", "pod", key)
		c.queue.AddRateLimited(key)
	case retryAfter > 0:
		c.queue.AddAfter(key, retryAfter)
	default:
		c.queue.Forget(key)
	}
	return true
}

// outcome is what happens to a gated pod.
type outcome struct {
	affinity  *v1.Affinity // nil: leave the pod's affinity as it is
	outcome   string       // GatedSeconds' label
	eventType string
	reason    string
	message   string
	failOpen  string // fail_open_total's reason, "" when not failing open
	retry     time.Duration
	// record is the decision written into the pod's archfilter.io/decision.
	record decision.Record
	// warnings are recorded as events of their own (reason, message).
	warnings [][2]string
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !placement.HasGate(pod) || pod.DeletionTimestamp != nil {
		return 0, nil
	}
	o := c.decide(ctx, pod)
	if o.retry > 0 {
		return o.retry, nil
	}
	return 0, c.release(ctx, pod, o)
}

// decide resolves the pod's images within the bounded wait, asks package
// decision what the plugin would decide, and says what to write; it never
// returns an outcome that keeps the pod gated past MaxGated.
func (c *Controller) decide(ctx context.Context, pod *v1.Pod) outcome {
	s := c.opts.Settings.ForPod(pod, c.opts.Policies)
	now := c.opts.Now()
	rec := decision.Record{By: c.opts.By, At: metav1.NewTime(now)}
	if s.Policy != nil {
		rec.Policy = s.Policy.Key()
	}
	if reason := s.Scope(pod, decision.ViaPlacement, c.opts.Namespaces); reason != "" {
		// Gated, then taken out of scope (its annotations or its namespace's
		// labels changed): released as it is.
		rec.Outcome, rec.Message = decision.OutcomeSkipped, string(reason)
		return outcome{outcome: metrics.OutcomeUnconstrained, eventType: v1.EventTypeNormal, reason: ReasonPlaced,
			message: "not in archfilter's scope (" + string(reason) + "); no affinity added", record: rec}
	}
	deadline := pod.CreationTimestamp.Add(c.opts.MaxGated)
	lookup := c.resolve(ctx, pod, deadline)
	d := s.Decide(pod, lookup)
	pastMaxGated := false
	if r := d.Rejection; r != nil && r.Kind == decision.RejectResolutionFailed {
		if now.Before(deadline) {
			klog.FromContext(ctx).V(3).Info("Images did not resolve, pod stays gated", "pod", klog.KObj(pod), "deadline", deadline, "errors", d.Unresolved())
			return outcome{retry: min(retryBackoffMax, max(retryBackoffBase, deadline.Sub(now)))}
		}
		// The gate must go at --max-gated (a gate the scheduler cannot see
		// past hides the pod from autoscalers too): failurePolicy Ignore
		// applies from then on.
		ignore := *s
		ignore.FailurePolicy = config.FailurePolicyIgnore
		d, pastMaxGated = ignore.Decide(pod, lookup), true
	}
	rec.Source = d.Source
	prefs, from, invalid := s.Preferred(pod)
	var warnings [][2]string
	if invalid != nil {
		warnings = append(warnings, [2]string{ReasonInvalidPreference, "Ignoring " + invalid.Error()})
	}
	if d.Rejection != nil {
		return c.reject(pod, &d, rec, warnings)
	}
	rec.Platforms = setString(d.Platforms)
	if len(prefs) > 0 {
		rec.Preferred = decision.PreferencesString(prefs) + " (" + string(from) + ")"
	}
	if d.FailedOpen {
		rec.Message = "unresolved: " + d.Unresolved()
	}
	if d.FailedOpen && d.Platforms.IsAny() {
		why, msg := "resolve_failed", fmt.Sprintf("images did not resolve (failurePolicy %s): %s; the pod is schedulable without an architecture constraint", s.FailurePolicy, d.Unresolved())
		if pastMaxGated {
			why = "max_gated"
			msg = fmt.Sprintf("images did not resolve within %v of the pod's creation: %s; the pod is schedulable without an architecture constraint", c.opts.MaxGated, d.Unresolved())
		}
		rec.Outcome = decision.OutcomeFailedOpen
		return outcome{outcome: metrics.OutcomeFailedOpen, eventType: v1.EventTypeWarning, reason: ReasonFailedOpen, message: msg, failOpen: why, record: rec, warnings: warnings}
	}
	aff, err := placement.Merge(pod, d.Platforms, prefs, placement.WithWindowsHostBuilds(c.windowsHostBuilds()...))
	if err != nil {
		rec.Outcome, rec.Message = decision.OutcomeNotApplied, err.Error()
		return outcome{outcome: metrics.OutcomeUnmergeable, eventType: v1.EventTypeWarning, reason: ReasonUnmergeable,
			message: fmt.Sprintf("%v; archfilter adds no constraint", err), failOpen: "unmergeable", record: rec, warnings: warnings}
	}
	if d.Platforms.IsAny() && apiequality.Semantic.DeepEqual(aff, pod.Spec.Affinity) {
		rec.Outcome = decision.OutcomeUnconstrained
		return outcome{outcome: metrics.OutcomeUnconstrained, eventType: v1.EventTypeNormal, reason: ReasonPlaced,
			message: "the pod's images run on any platform; no affinity added", record: rec, warnings: warnings}
	}
	rec.Outcome = decision.OutcomeConstrained
	if d.FailedOpen {
		rec.Outcome = decision.OutcomeFailedOpen
		return outcome{affinity: aff, outcome: metrics.OutcomeAffinityWritten, eventType: v1.EventTypeWarning, reason: ReasonFailedOpen, record: rec, warnings: warnings,
			message: fmt.Sprintf("images did not resolve (failurePolicy Ignore): %s; node affinity requires the fallbackPlatforms and what the resolved images run on: %s", d.Unresolved(), d.Platforms)}
	}
	return outcome{affinity: aff, outcome: metrics.OutcomeAffinityWritten, eventType: v1.EventTypeNormal, reason: ReasonPlaced, record: rec, warnings: warnings,
		message: fmt.Sprintf("node affinity requires the platforms the pod's images run on (from %s): %s", d.Source, d.Platforms)}
}

// reject is the outcome for a pod the plugin would reject at PreFilter: node
// affinity no node matches keeps it Pending, as the plugin leaves it, and no
// autoscaler buys a node for it.
func (c *Controller) reject(pod *v1.Pod, d *decision.Decision, rec decision.Record, warnings [][2]string) outcome {
	rec.Outcome, rec.Message = decision.OutcomeRejected, d.Rejection.Message
	aff, err := placement.Unsatisfiable(pod)
	if err != nil {
		rec.Outcome = decision.OutcomeNotApplied
		return outcome{outcome: metrics.OutcomeUnmergeable, eventType: v1.EventTypeWarning, reason: ReasonUnmergeable, record: rec, warnings: warnings,
			message: fmt.Sprintf("%s; but %v, so archfilter adds no constraint", d.Rejection.Message, err), failOpen: "unmergeable"}
	}
	return outcome{affinity: aff, outcome: metrics.OutcomeRejected, eventType: v1.EventTypeWarning, reason: ReasonRejected, record: rec, warnings: warnings,
		message: d.Rejection.Message + "; node affinity that no node matches keeps the pod Pending, as the ArchFilter plugin would"}
}

// resolve asks the registries for the platforms of pod's images (none when it
// declares them), within maxWait and the time left before deadline, and
// returns the answers as a lookup for package decision.
func (c *Controller) resolve(ctx context.Context, pod *v1.Pod, deadline time.Time) decision.Lookup {
	if decision.Declared(pod) {
		return podimages.Lookup(nil)
	}
	window := min(c.opts.Settings.MaxWait, deadline.Sub(c.opts.Now()))
	window = max(window, minResolveWindow)
	rctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	return podimages.Resolve(rctx, c.opts.Resolver, c.opts.Credentials, pod)
}

// setString is a set as a record holds it: "*" for any platform.
func setString(s platform.Set) string {
	if s.IsAny() {
		return "*"
	}
	return s.String()
}

// release writes d's affinity (if any) and removes the gate in one update,
// retrying on conflicts with a fresh copy. A pod whose update the apiserver
// refuses is released without affinity rather than kept gated.
func (c *Controller) release(ctx context.Context, pod *v1.Pod, d outcome) error {
	update := func(p *v1.Pod, d outcome) (*v1.Pod, error) {
		p = p.DeepCopy()
		if d.affinity != nil {
			p.Spec.Affinity = d.affinity
		}
		if value, err := d.record.Encode(); err == nil {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[annotations.Decision] = value
		}
		p.Spec.SchedulingGates = placement.WithoutGate(p.Spec.SchedulingGates)
		return c.opts.Client.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{})
	}
	updated, err := update(pod, d)
	if apierrors.IsInvalid(err) && d.affinity != nil {
		// The merged affinity was refused (the apiserver's rules for gated
		// pods are stricter than Merge knows): the pod goes without it.
		rec := d.record
		rec.Outcome, rec.Message = decision.OutcomeNotApplied, fmt.Sprintf("the apiserver refused the node affinity: %v", err)
		d = outcome{outcome: metrics.OutcomeUnmergeable, eventType: v1.EventTypeWarning, reason: ReasonUnmergeable, record: rec, warnings: d.warnings,
			message: fmt.Sprintf("the apiserver refused the merged node affinity (%v); archfilter adds no constraint", err), failOpen: "unmergeable"}
		updated, err = update(pod, d)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		// A conflict means the informer's copy is old: the update event
		// requeues the pod; AddRateLimited bounds the retries' rate.
		return fmt.Errorf("updating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	metrics.GatedSeconds.WithLabelValues(d.outcome).Observe(c.opts.Now().Sub(pod.CreationTimestamp.Time).Seconds())
	if d.outcome == metrics.OutcomeAffinityWritten {
		metrics.AffinityWritten.Inc()
	}
	if d.failOpen != "" {
		metrics.FailOpen.WithLabelValues(d.failOpen).Inc()
	}
	if c.opts.Recorder != nil {
		for _, w := range d.warnings {
			c.opts.Recorder.Event(updated, v1.EventTypeWarning, w[0], w[1])
		}
		c.opts.Recorder.Event(updated, d.eventType, d.reason, d.message)
	}
	klog.FromContext(ctx).V(2).Info("Released pod", "pod", klog.KObj(pod), "outcome", d.outcome)
	return nil
}

// RemoveGates removes the placement gate from every pod that carries it,
// without adding affinity, and returns how many pods it released. It is the
// uninstall path: run it after the webhook configuration is gone.
func RemoveGates(ctx context.Context, client kubernetes.Interface, recorder record.EventRecorder) (int, error) {
	released := 0
	var errs []error
	err := listPages(ctx, client, func(pod *v1.Pod) {
		if !placement.HasGate(pod) {
			return
		}
		err := retryOnConflict(ctx, client, pod, func(p *v1.Pod) { p.Spec.SchedulingGates = placement.WithoutGate(p.Spec.SchedulingGates) })
		if err != nil {
			errs = append(errs, err)
			return
		}
		released++
		metrics.FailOpen.WithLabelValues("uninstalled").Inc()
		if recorder != nil {
			recorder.Event(pod, v1.EventTypeWarning, ReasonGateRemoved, "the placement mode is being uninstalled: gate removed without added affinity")
		}
	})
	if err != nil {
		errs = append(errs, err)
	}
	return released, errors.Join(errs...)
}

func listPages(ctx context.Context, client kubernetes.Interface, fn func(*v1.Pod)) error {
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("listing pods: %w", err)
		}
		for i := range list.Items {
			fn(&list.Items[i])
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

func retryOnConflict(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, mutate func(*v1.Pod)) error {
	pods := client.CoreV1().Pods(pod.Namespace)
	for attempt := 0; ; attempt++ {
		p := pod.DeepCopy()
		mutate(p)
		_, err := pods.Update(ctx, p, metav1.UpdateOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == 5 {
			return fmt.Errorf("removing the gate from pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if pod, err = pods.Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		if !placement.HasGate(pod) {
			return nil
		}
	}
}

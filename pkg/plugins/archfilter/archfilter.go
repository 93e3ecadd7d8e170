// Package archfilter is the scheduler framework adapter of archfilter: it keeps
// pods off nodes whose os/architecture cannot run their images. Registry I/O
// never happens in the scheduling cycle: PreEnqueue holds a pod whose image
// platforms are unknown until the resolver's workers answer, and PreFilter,
// Filter and Score only read memory.
package archfilter

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8sversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/apis/config/validation"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/policystatus"
	"github.com/archfilter/archfilter/pkg/policystore"
	"github.com/archfilter/archfilter/pkg/resolver"
	"github.com/archfilter/archfilter/pkg/version"
)

// Name is the plugin name used in KubeSchedulerConfiguration profiles.
const Name = "ArchFilter"

// ArchFilter keeps pods off nodes whose os/architecture cannot run their images.
type ArchFilter struct {
	handle      fwk.Handle
	settings    *decision.Settings
	scope       *scope
	resolver    resolver.Interface
	credentials credentialSource
	nodes       *nodeIndex
	platforms   *platformTable
	held        *heldPods
	// gangs finds the other members of a pod's gang (nil without informers).
	gangs *gangs
	// daemonSetChecked holds the UIDs of DaemonSet pods already checked.
	daemonSetChecked sync.Map
	events           podEvents
	// explained holds the pods whose exclusions an event has named (explainOnce).
	explained *explainedPods
	clock     clock.WithDelayedExecution
	// policies holds the cluster's ArchFilterPolicy objects (nil when
	// ArchFilterArgs.policies.enabled is false); policyLookup is its Lookup,
	// bound once. policyEvents: register the policy event (hints.go).
	policies     *policystore.Store
	policyLookup decision.PolicyLookup
	policyEvents bool
	// lastCycle is the cycle state PreFilter last wrote and what it wrote there,
	// so Filter finds it without the cycle state's lookup (see filterState).
	lastCycle atomic.Pointer[cycleRef]
}

var (
	_ fwk.PreEnqueuePlugin  = &ArchFilter{}
	_ fwk.PreFilterPlugin   = &ArchFilter{}
	_ fwk.FilterPlugin      = &ArchFilter{}
	_ fwk.PreScorePlugin    = &ArchFilter{}
	_ fwk.ScorePlugin       = &ArchFilter{}
	_ fwk.ScoreExtensions   = &ArchFilter{}
	_ fwk.EnqueueExtensions = &ArchFilter{}
)

// credentialSource gives the credentials a pod's images may be pulled with.
type credentialSource interface {
	ForPod(pod *v1.Pod) resolver.Credentials
}

// New validates args and builds the plugin with a registry resolver and
// informer-backed credentials.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*config.ArchFilterArgs)
	if !ok {
		return nil, fmt.Errorf("want args to be of type ArchFilterArgs, got %T", obj)
	}
	if err := validation.ValidateArchFilterArgs(field.NewPath("args"), args); err != nil {
		return nil, err
	}
	deps, err := newRegistryDeps(ctx, args, h)
	if err != nil {
		return nil, err
	}
	logStart(klog.FromContext(ctx), args)
	return newPlugin(ctx, args, h, deps)
}

// deps are what ArchFilter talks to; tests substitute them.
type deps struct {
	resolver    resolver.Interface
	credentials credentialSource
	clock       clock.WithDelayedExecution
	// leading says whether this process leads; nil reads the process's leader
	// election (leader.go).
	leading func() bool
	// policies is the ArchFilterPolicy store (nil: no policies);
	// policiesWatched, whether it watched the cluster from the start.
	policies        *policystore.Store
	policiesWatched bool
	// policyClient writes the policies' status (nil: nothing writes it).
	policyClient dynamic.Interface
}

// reportingStatus makes the first ArchFilter instance of the process (the
// first profile) the one that writes policies' status.
var reportingStatus sync.Once

func newPlugin(ctx context.Context, args *config.ArchFilterArgs, h fwk.Handle, d deps) (*ArchFilter, error) {
	s, err := decision.NewSettings(args)
	if err != nil {
		return nil, err
	}
	if d.clock == nil {
		d.clock = clock.RealClock{}
	}
	registerMetrics()
	pl := &ArchFilter{
		handle:       h,
		settings:     s,
		scope:        newScope(s),
		policies:     d.policies,
		policyLookup: d.policies.Lookup,
		policyEvents: d.policies != nil && d.policiesWatched,
		resolver:     d.resolver,
		credentials:  d.credentials,
		nodes:        newNodeIndex(),
		platforms:    newPlatformTable(),
		explained:    newExplainedPods(),
		clock:        d.clock,
	}
	if d.leading == nil {
		l := processLeadership()
		go l.run(ctx, leadershipInterval)
		d.leading = l.Leading
	}
	pl.events = podEvents{recorder: h.EventRecorder(), leading: d.leading}
	pl.held = newHeldPods(d.clock, pl.activate)
	pl.held.onSlow = pl.events.waiting
	pl.held.onResolved = pl.announce
	pl.held.onDeleted = func(uid types.UID) {
		pl.daemonSetChecked.Delete(uid)
		pl.explained.forget(uid)
	}
	if d.policies != nil {
		pl.scope.policies = pl.policyLookup
	}
	if f := h.SharedInformerFactory(); f != nil {
		if d.policies != nil {
			pods := f.Core().V1().Pods().Lister()
			d.policies.OnChange(func(c policystore.Change) { pl.requeueForPolicy(pods, c) })
			if d.policyClient != nil {
				reportingStatus.Do(func() {
					r := &policystatus.Reporter{Client: d.policyClient, Store: d.policies, Settings: s, Pods: pods,
						NodePlatforms: func() []platform.NodePlatform { return pl.platforms.snapshot().platforms },
						Namespaces:    pl.scope.labelsOf, Leading: d.leading}
					go r.Run(ctx)
				})
			}
		}
		if s.NamespaceSelector != nil {
			pl.scope.namespaces = f.Core().V1().Namespaces().Lister()
		}
		if err := watchNodes(f.Core().V1().Nodes().Informer(), pl.nodes, pl.platforms); err != nil {
			return nil, err
		}
		if err := pl.held.forgetDeletedPods(f.Core().V1().Pods().Informer()); err != nil {
			return nil, err
		}
		if pl.gangs, err = indexGangs(f.Core().V1().Pods().Informer()); err != nil {
			return nil, err
		}
	}
	go func() {
		<-ctx.Done()
		pl.held.stop()
	}()
	return pl, nil
}

// settingsFor returns the settings that apply to pod: the cluster's, with the
// ArchFilterPolicy that governs it. Memory only.
func (pl *ArchFilter) settingsFor(pod *v1.Pod) *decision.Settings {
	return pl.settings.ForPod(pod, pl.policyLookup)
}

// requeueForPolicy activates the unscheduled pods of the changed policy's
// namespace that it selected before or selects after the change, so they are
// decided again under the policy that now governs them. It runs in the policy
// informer's goroutine, outside any scheduling cycle.
func (pl *ArchFilter) requeueForPolicy(pods corelisters.PodLister, c policystore.Change) {
	list, err := pods.Pods(c.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	selected := map[string]*v1.Pod{}
	for _, pod := range list {
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			continue
		}
		if (c.Before == nil && c.After == nil) || (c.Before != nil && c.Before.Selects(pod)) || (c.After != nil && c.After.Selects(pod)) {
			selected[podKey(pod)] = pod
		}
	}
	pl.activate(selected)
}

// Name returns the plugin name.
func (pl *ArchFilter) Name() string { return Name }

// activate moves held pods back to the active queue, with the held members of
// their gangs, which may have waited for them (gangReady). It takes the queue
// lock, so it runs only from resolver callbacks and timers, never from
// PreEnqueue or a queueing hint.
func (pl *ArchFilter) activate(pods map[string]*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	for _, pod := range pods {
		for _, m := range pl.gangs.members(gangKey(pod), pod) {
			if pl.held.isHeld(m.UID) {
				pods[podKey(m)] = m
			}
		}
	}
	pl.handle.Activate(klog.Background(), pods)
}

// announce records what was learned about a held pod once its images resolved.
func (pl *ArchFilter) announce(pod *v1.Pod) {
	lookup := pl.lookupFor(pod)
	rules := pl.settingsFor(pod)
	d := rules.Decide(pod, lookup)
	switch {
	case len(d.Failed) > 0:
		pl.events.rejected(pod, &d)
	case d.Rejection == nil:
		snap := pl.platforms.snapshot()
		why := exclusions(snap, rules, pod, &d, lookup)
		if pl.events.resolved(pod, d.Platforms, why) && len(why) > 0 {
			pl.explained.add(pod.UID, explanation{set: d.Platforms.String(), platforms: len(snap.platforms)})
		}
	}
}

// explainOnce records, for a pod whose cycle excludes node platforms of snap, the
// ImagePlatformsResolved event that says what excludes each: Filter's reason names
// only the pod's platforms. A held pod got it when its images resolved (announce);
// this is for the others (images already cached, platforms declared by annotation,
// nodes of a new platform since) and is recorded once per pod and explanation, not
// once per cycle. Only the first cycle of a pod pays for the message.
func (pl *ArchFilter) explainOnce(pod *v1.Pod, rules *decision.Settings, d *decision.Decision, lookup decision.Lookup, snap *platformSnapshot, set string) {
	if !pl.events.active() {
		return
	}
	e := explanation{set: set, platforms: len(snap.platforms)}
	if pl.explained.has(pod.UID, e) {
		return
	}
	why := exclusions(snap, rules, pod, d, lookup)
	if len(why) > 0 && pl.events.resolved(pod, d.Platforms, why) {
		pl.explained.add(pod.UID, e)
	}
}

// maxExclusions bounds the causes an event explains, and the node platforms
// it names for one cause.
const maxExclusions = 4

// exclusions says, for the platforms of snap's nodes that d does not allow, what
// excludes them: one line per cause, naming the platforms it excludes
// ("container "main" (shop/api:v1) does not run on linux/arm64, linux/s390x"),
// at most maxExclusions causes and platforms per cause; nil when d allows every
// node.
func exclusions(snap *platformSnapshot, rules *decision.Settings, pod *v1.Pod, d *decision.Decision, lookup decision.Lookup) []string {
	if d.Platforms.IsAny() {
		return nil
	}
	var excluded []platform.NodePlatform
	allowed := allows(d.Platforms)
	for _, np := range snap.platforms {
		if !allowed(np, np.OS != "" && np.Architecture != "") {
			excluded = append(excluded, np)
		}
	}
	// In a stable order, not the order the informer delivered the nodes in.
	slices.SortFunc(excluded, func(a, b platform.NodePlatform) int {
		return cmp.Or(cmp.Compare(a.OS, b.OS), cmp.Compare(a.Architecture, b.Architecture), cmp.Compare(a.WindowsBuild, b.WindowsBuild))
	})
	// Exclusion's sentences end with the platform they exclude: the same cause for
	// several platforms is one line.
	type cause struct {
		text      string
		platforms []string
	}
	var causes []*cause
	byText := map[string]*cause{}
	for _, np := range excluded {
		why, label := rules.Exclusion(pod, d, lookup, np), np.Describe()
		text, ok := strings.CutSuffix(why, " "+label)
		if !ok {
			text, label = why, ""
		}
		c := byText[text]
		if c == nil {
			c = &cause{text: text}
			byText[text] = c
			causes = append(causes, c)
		}
		if label != "" {
			c.platforms = append(c.platforms, label)
		}
	}
	var out []string
	for i, c := range causes {
		if i == maxExclusions {
			out = append(out, fmt.Sprintf("and %d more causes", len(causes)-maxExclusions))
			break
		}
		names := c.platforms
		if len(names) > maxExclusions {
			names = append(slices.Clip(names[:maxExclusions]), fmt.Sprintf("%d more", len(c.platforms)-maxExclusions))
		}
		if len(names) == 0 {
			out = append(out, c.text)
			continue
		}
		out = append(out, c.text+" "+strings.Join(names, ", "))
	}
	return out
}

// request builds the resolver request for one image of pod.
func request(image string, creds resolver.Credentials) resolver.Request {
	return resolver.Request{Image: image, Credentials: creds}
}

// lookupFor reads the resolver's cache (memory only) for pod's images, with the
// credentials pod's images are pulled with.
func (pl *ArchFilter) lookupFor(pod *v1.Pod) decision.Lookup {
	return pl.lookup(pl.credentials.ForPod(pod))
}

// lookup reads the resolver's cache (memory only) with creds.
func (pl *ArchFilter) lookup(creds resolver.Credentials) decision.Lookup {
	return func(image string) (resolver.Result, bool) { return pl.resolver.Lookup(request(image, creds)) }
}

// statusf returns a fresh status; the framework writes into statuses, so they
// are never shared.
func statusf(code fwk.Code, format string, args ...any) *fwk.Status {
	return fwk.NewStatus(code, fmt.Sprintf(format, args...))
}

// logStart says, in one line, which archfilter runs and with what effective
// settings: what an operator reads first when a pod lands somewhere unexpected.
func logStart(logger klog.Logger, args *config.ArchFilterArgs) {
	logger.Info("ArchFilter enabled", "version", version.Version, "kubernetes", k8sversion.Get().GitVersion,
		"failurePolicy", args.FailurePolicy, "fallbackPlatforms", args.FallbackPlatforms,
		"maxWait", args.MaxWait.Duration, "resolveTimeout", args.ResolveTimeout.Duration, "workers", args.Workers,
		"tagTTL", args.Cache.TagTTL.Duration, "staleWhileRevalidate", args.Cache.StaleWhileRevalidate.Duration,
		"registries", len(args.Registries), "allowedRegistries", args.AllowedRegistries, "deniedRegistries", args.DeniedRegistries,
		"preferredPlatforms", len(args.PreferredPlatforms), "daemonSetPolicy", args.DaemonSetPolicy,
		"archTaintToleration", args.ArchTaintToleration, "run32BitImagesOn", args.Run32BitImagesOn,
		"excludedNamespaces", args.ExcludedNamespaces, "namespaceSelector", args.NamespaceSelector != nil)
}

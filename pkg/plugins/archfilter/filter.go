package archfilter

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/internal/schedfw"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
)

// Reasons, in the plural "node(s) …" style the scheduler aggregates.
const (
	// ReasonPlatformMismatch is Filter's reason; the pod's platforms follow in parentheses.
	ReasonPlatformMismatch = "node(s) didn't match the platforms of the pod's images"
	// ReasonNoCommonPlatform is PreFilter's reason when the images share no platform.
	ReasonNoCommonPlatform = "the pod's images have no platform in common"
	// ReasonOwnConstraintConflict is PreFilter's reason when the pod's own
	// spec.os, nodeSelector or node affinity excludes every platform its images run on.
	ReasonOwnConstraintConflict = "the pod's spec.os, nodeSelector or node affinity excludes every platform its images run on"
	// ReasonResolutionFailed is PreFilter's reason under failurePolicy Fail.
	ReasonResolutionFailed = "the platforms of the pod's images could not be resolved (failurePolicy Fail)"
	// ReasonInvalidAnnotation is PreFilter's reason for a malformed annotation.
	ReasonInvalidAnnotation = "invalid archfilter annotation"
)

const preFilterStateKey fwk.StateKey = "PreFilter" + Name

// preFilterState is the pod's allowed platform set for one cycle. It is never
// modified after PreFilter, so Clone can share it.
type preFilterState struct {
	set platform.Set
	// allowed answers Filter: whether set allows a node.
	allowed byPlatform[bool]
	// named hands out Filter's rejections for a node whose platform allowed's
	// snapshot numbers, by that number. Their message names what excludes the
	// platform, so the scheduler's FailedScheduling event counts the rejected
	// nodes per platform and cause. Each is built by the first Filter that
	// rejects a node of its platform, so a cycle pays only for the platforms it
	// rejects.
	named []atomic.Pointer[rejections]
	// explain is the message of named's rejections for a platform.
	explain func(platform.NodePlatform) string
	// unnamed hands out rejections for nodes outside the snapshot (the table lags
	// the scheduler's snapshot): their message lists set only.
	unnamed *rejections
	// tolerateArchTaints lets ArchAwareTaintToleration tolerate arch taints
	// of platforms in set (archTaintToleration).
	tolerateArchTaints bool
}

func (s *preFilterState) Clone() fwk.StateData { return s }

// cycleRef is a cycle state and the preFilterState PreFilter wrote into it.
type cycleRef struct {
	state fwk.CycleState
	s     *preFilterState
}

// filterState is readState for Filter, which runs for every examined node of a cycle:
// the state of the cycle PreFilter last ran for is held by the plugin, and found by
// comparing pointers, without the cycle state's locked, hashed lookup (a quarter of
// Filter's time in test/perf/cycle's profile). Any other cycle state (a clone, for
// preemption or nominated pods) is read from itself. Holding the reference keeps
// one cycle's state alive until the next cycle.
func (pl *ArchFilter) filterState(state fwk.CycleState) (*preFilterState, error) {
	if last := pl.lastCycle.Load(); last != nil && last.state == state {
		return last.s, nil
	}
	return readState(state)
}

func readState(state fwk.CycleState) (*preFilterState, error) {
	data, err := state.Read(preFilterStateKey)
	if err != nil {
		return nil, err
	}
	s, ok := data.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%s: state is %T, want *preFilterState", Name, data)
	}
	return s, nil
}

// decision is the allowed platform set for a pod, or why there is none.
type decision struct {
	set    platform.Set
	status *fwk.Status // non-nil: the pod cannot be scheduled now
	// metricReason labels the rejection metric when status is non-nil.
	metricReason string
	// failures are resolution failures that were tolerated or caused status.
	failures []error
	// unresolved describes pending images and failures for people; "" when
	// every image resolved.
	unresolved string
	// retryAt is when a cached failure expires (zero if none).
	retryAt time.Time
	// declared is true when the pod's archfilter.io/platforms annotation gave the
	// images' platforms.
	declared bool
}

// decide turns the cache's verdict into the set the pod may run on, applying
// the failure policy and the pod's own os/arch requirements. Memory only.
func (pl *ArchFilter) decide(pod *v1.Pod) decision {
	v, err := pl.evaluate(pod)
	if err != nil {
		return decision{status: statusf(fwk.UnschedulableAndUnresolvable, "%s: %v", ReasonInvalidAnnotation, err), metricReason: "InvalidAnnotation"}
	}
	set := v.set
	d := decision{failures: v.failures, declared: v.declared}
	if len(v.failures) > 0 || len(v.pending) > 0 {
		d.unresolved = unresolvedSummary(v)
		if pl.settings.failurePolicy == config.FailurePolicyFail {
			d.status = statusf(fwk.UnschedulableAndUnresolvable, "%s: %s", ReasonResolutionFailed, d.unresolved)
			d.metricReason = "ResolutionFailed"
			d.retryAt = pl.retryTime(pod, v)
			return d
		}
		set = set.Intersect(pl.settings.fallback)
	}
	if set.IsEmpty() {
		d.status = fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ReasonNoCommonPlatform)
		if img, before, ok := podplatform.Emptying(pod, pl.platformsOf(pod)); ok {
			d.status = statusf(fwk.UnschedulableAndUnresolvable, "%s: %s runs on none of %s, the platforms of the images before it", ReasonNoCommonPlatform, img, before)
		}
		d.metricReason = "NoCommonPlatform"
		return d
	}
	restricted := podplatform.OwnConstraintOf(pod).Restrict(set)
	if restricted.IsEmpty() {
		d.status = statusf(fwk.UnschedulableAndUnresolvable, "%s (%s)", ReasonOwnConstraintConflict, set)
		d.metricReason = "OwnConstraintConflict"
		return d
	}
	d.set = restricted
	return d
}

// unresolvedSummary names what is unknown: pending images, then failures.
func unresolvedSummary(v verdict) string {
	var parts []string
	if len(v.pending) > 0 {
		parts = append(parts, "still resolving "+strings.Join(v.pending, ", "))
	}
	if len(v.failures) > 0 {
		parts = append(parts, failureSummary(v.failures))
	}
	return strings.Join(parts, "; ")
}

// retryTime is when the earliest cached failure of pod expires.
func (pl *ArchFilter) retryTime(pod *v1.Pod, v verdict) time.Time {
	if len(v.failures) == 0 {
		return time.Time{}
	}
	var earliest time.Time
	creds := pl.credentials.ForPod(pod)
	podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
		image := img.Reference
		if res, ok := pl.resolver.Lookup(request(image, creds)); ok && res.Err != nil && !res.Expires.IsZero() {
			if earliest.IsZero() || res.Expires.Before(earliest) {
				earliest = res.Expires
			}
		}
		return true
	})
	return earliest
}

// PreFilter computes the pod's allowed platform set once per cycle. It returns
// Skip when the pod is unconstrained, and narrows the cycle to the nodes of the
// allowed platforms when they are at most half of the cluster.
func (pl *ArchFilter) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*schedfw.PreFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	if reason := pl.scope.skipReason(pod); reason != "" {
		logger.V(5).Info("ArchFilter does not apply", "pod", klog.KObj(pod), "reason", reason)
		return nil, fwk.NewStatus(fwk.Skip)
	}
	d := pl.decide(pod)
	if d.status != nil {
		filterRejections.WithLabelValues(d.metricReason).Inc()
		if !d.retryAt.IsZero() {
			pl.held.retryAt(pod, d.retryAt)
		}
		pl.events.rejected(pod, d)
		logger.V(4).Info("Pod cannot be placed by platform", "pod", klog.KObj(pod), "reason", d.status.Message())
		return nil, d.status
	}
	if d.unresolved != "" {
		pl.events.failedOpen(pod, d)
	}
	if d.set.IsAny() {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	snap := pl.platforms.snapshot()
	mismatch := ReasonPlatformMismatch + " (" + d.set.String() + ")"
	s := &preFilterState{
		set:                d.set,
		allowed:            newByPlatform(snap, allows(d.set)),
		named:              make([]atomic.Pointer[rejections], len(snap.platforms)),
		explain:            func(np platform.NodePlatform) string { return mismatch + ": " + pl.exclusion(pod, d, np) },
		unnamed:            newRejections(mismatch),
		tolerateArchTaints: pl.settings.archTaintToleration,
	}
	state.Write(preFilterStateKey, s)
	pl.lastCycle.Store(&cycleRef{state: state, s: s})
	if v := logger.V(4); v.Enabled() {
		v.Info("Pod platforms", "pod", klog.KObj(pod), "platforms", d.set.String())
	}

	if namesNodes(pod) {
		// NodeAffinity already narrows the cycle to the nodes the pod names
		// (DaemonSet pods); a second, disjoint result would replace our reason
		// with the framework's "didn't satisfy plugin(s) simultaneously".
		return nil, nil
	}
	// The index is fed by its own informer listener and may lag the scheduler's
	// snapshot, so it is only used to narrow the cycle, where a stale answer
	// delays a pod by a cycle at worst; accepting or rejecting nodes is left
	// to Filter, which reads the snapshot.
	if names := pl.nodes.narrow(d.set, len(nodes)); names != nil {
		return &schedfw.PreFilterResult{NodeNames: names}, nil
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the decision does not depend on other pods.
func (pl *ArchFilter) PreFilterExtensions() schedfw.PreFilterExtensions { return nil }

// Filter rejects nodes whose os/arch (and Windows build) the pod's images do
// not support. The accept path does not allocate, the reject path once per
// rejectionChunk nodes and, the first time in a cycle, once per rejected platform
// for its message. A node that reports no os/arch at all is accepted:
// there is nothing to judge it by.
func (pl *ArchFilter) Filter(_ context.Context, state fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := pl.filterState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	allowed, id := s.allowed.lookup(nodeInfo.Node())
	if allowed {
		return nil
	}
	nodeRejections.Inc()
	if id < 0 {
		return s.unnamed.status()
	}
	return s.namedFor(id).status()
}

// namedFor returns the rejections for the platform numbered id, building them on
// first use. Filter runs in parallel: two goroutines may both build them, and the
// first stored wins.
func (s *preFilterState) namedFor(id int) *rejections {
	if r := s.named[id].Load(); r != nil {
		return r
	}
	s.named[id].CompareAndSwap(nil, newRejections(s.explain(s.allowed.snapshot.platforms[id])))
	return s.named[id].Load()
}

// allows says whether set allows a node's platform. A node that reports no
// os/arch is allowed: there is nothing to judge it by.
func allows(set platform.Set) func(np platform.NodePlatform, known bool) bool {
	return func(np platform.NodePlatform, known bool) bool { return !known || set.MatchesNode(np) }
}

// exclusion says, for a person, why a pod allowed on d.set cannot run on a node of
// platform np: the annotation that declared the platforms, the first image that does
// not run there, the fallback platforms of failurePolicy Ignore, or else the pod's own
// os/arch constraints. Memory only.
func (pl *ArchFilter) exclusion(pod *v1.Pod, d decision, node platform.NodePlatform) string {
	np := node.String()
	if node.WindowsBuild != "" {
		np += " build " + node.WindowsBuild
	}
	if d.declared {
		return fmt.Sprintf("its annotation %s excludes %s", annotations.Platforms, np)
	}
	if img, ok := podplatform.Excluding(pod, pl.platformsOf(pod), node); ok {
		return fmt.Sprintf("%s does not run on %s", img, np)
	}
	if d.unresolved != "" && !pl.settings.fallback.MatchesNode(node) {
		return fmt.Sprintf("fallbackPlatforms exclude %s while images are unresolved", np)
	}
	return fmt.Sprintf("its own spec.os, nodeSelector or node affinity excludes %s", np)
}

// platformsOf reads an image of pod's platforms from the resolver's cache, with the
// compatibility rules applied, for explaining a decision.
func (pl *ArchFilter) platformsOf(pod *v1.Pod) podplatform.PlatformsOf {
	creds := pl.credentials.ForPod(pod)
	return func(img podplatform.Image) (platform.Set, bool) {
		res, ok := pl.resolver.Lookup(request(img.Reference, creds))
		if !ok || res.Err != nil {
			return platform.Set{}, false
		}
		return pl.settings.compat.Expand(res.Platforms), true
	}
}

// resolvedPlatforms is the set the pod may run on, and false when there is
// none (PreFilter would reject the pod); used by the queueing hints.
func (pl *ArchFilter) resolvedPlatforms(pod *v1.Pod) (platform.Set, bool) {
	d := pl.decide(pod)
	return d.set, d.status == nil
}

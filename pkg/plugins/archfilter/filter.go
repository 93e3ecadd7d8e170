package archfilter

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
)

// Reasons, in the plural "node(s) …" style the scheduler aggregates. PreFilter's
// rejections are package decision's, so that every front-end gives the same text.
const (
	// ReasonPlatformMismatch is Filter's reason, the same for every node it rejects,
	// so that the scheduler counts them in one clause; the pod's platforms follow in
	// parentheses. What excludes each node platform is in the pod's
	// ImagePlatformsResolved event.
	ReasonPlatformMismatch = "node(s) didn't match the platforms of the pod's images"
	// ReasonNoCommonPlatform is PreFilter's reason when the images share no platform.
	ReasonNoCommonPlatform = decision.ReasonNoCommonPlatform
	// ReasonOwnConstraintConflict is PreFilter's reason when the pod's own
	// spec.os, nodeSelector or node affinity excludes every platform its images run on.
	ReasonOwnConstraintConflict = decision.ReasonOwnConstraintConflict
	// ReasonResolutionFailed is PreFilter's reason under failurePolicy Fail.
	ReasonResolutionFailed = decision.ReasonResolutionFailed
	// ReasonInvalidAnnotation is PreFilter's reason for a malformed annotation.
	ReasonInvalidAnnotation = decision.ReasonInvalidAnnotation
)

const preFilterStateKey fwk.StateKey = "PreFilter" + Name

// preFilterState is the pod's allowed platform set for one cycle. It is never
// modified after PreFilter, so Clone can share it.
type preFilterState struct {
	set platform.Set
	// allowed answers Filter: whether set allows a node.
	allowed byPlatform[bool]
	// rejected hands out Filter's rejections. Every node Filter rejects in a cycle
	// gets the same reason, which names only the pod's platforms, so that the
	// scheduler's FailedScheduling counts them in one clause, as upstream's plugins
	// are counted ("4 node(s) didn't match …"). What excludes each node platform
	// is said once per pod, in an event (explainOnce).
	rejected *rejections
	// tolerateArchTaints lets ArchAwareTaintToleration tolerate arch taints
	// of platforms in set (archTaintToleration).
	tolerateArchTaints bool
	// filterSkipped: set allows every platform of the node table, PreFilter
	// returned Skip, and only set and tolerateArchTaints are filled in. Reserve
	// checks the chosen node.
	filterSkipped bool
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

// PreFilter computes the pod's allowed platform set once per cycle. It returns
// Skip when the pod is unconstrained or its set allows every platform of the node
// table (Reserve then checks the chosen node), and narrows the cycle to the nodes
// of the allowed platforms when they are at most half of the cluster. When it
// excludes node platforms, the pod's first such cycle records what excludes each
// (explainOnce): Filter's reason does not say.
func (pl *ArchFilter) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	if reason := pl.scope.skipReason(pod); reason != "" {
		logger.V(5).Info("ArchFilter does not apply", "pod", klog.KObj(pod), "reason", reason)
		return nil, fwk.NewStatus(fwk.Skip)
	}
	lookup := pl.lookupFor(pod)
	rules := pl.settingsFor(pod)
	d := rules.Decide(pod, lookup)
	if r := d.Rejection; r != nil {
		filterRejections.WithLabelValues(r.Kind).Inc()
		if !d.RetryAt.IsZero() {
			pl.held.retryAt(pod, d.RetryAt)
		}
		pl.events.rejected(pod, &d)
		logger.V(4).Info("Pod cannot be placed by platform", "pod", klog.KObj(pod), "reason", r.Message)
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, r.Message)
	}
	if d.FailedOpen {
		pl.events.failedOpen(pod, &d)
	}
	if d.Platforms.IsAny() {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	snap := pl.platforms.snapshot()
	allowed := allows(d.Platforms)
	if allAllow(snap, allowed) {
		// Filter would accept every node the table knows: skip it (a Filter call per
		// node is most of what ArchFilter costs a cycle). The table may lag the
		// scheduler's snapshot, so Reserve checks the one node chosen (reserve.go).
		state.Write(preFilterStateKey, &preFilterState{
			set:                d.Platforms,
			filterSkipped:      true,
			tolerateArchTaints: pl.settings.ArchTaintToleration,
		})
		if v := logger.V(4); v.Enabled() {
			v.Info("Pod platforms include every node platform; Filter skipped", "pod", klog.KObj(pod), "platforms", d.Platforms.String(), "source", d.Source)
		}
		return nil, fwk.NewStatus(fwk.Skip)
	}
	set := d.Platforms.String()
	s := &preFilterState{
		set:                d.Platforms,
		allowed:            newByPlatform(snap, allowed),
		rejected:           newRejections(mismatchReason(set)),
		tolerateArchTaints: pl.settings.ArchTaintToleration,
	}
	state.Write(preFilterStateKey, s)
	pl.lastCycle.Store(&cycleRef{state: state, s: s})
	if v := logger.V(4); v.Enabled() {
		v.Info("Pod platforms", "pod", klog.KObj(pod), "platforms", set, "source", d.Source)
	}
	if !d.FailedOpen {
		// The fail-open event already says which platforms the pod got and why.
		pl.explainOnce(pod, rules, &d, lookup, snap, set)
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
	if names := pl.nodes.narrow(d.Platforms, len(nodes)); names != nil {
		return &fwk.PreFilterResult{NodeNames: names}, nil
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the decision does not depend on other pods.
func (pl *ArchFilter) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// mismatchReason is Filter's reason for a pod allowed on set (its String).
func mismatchReason(set string) string {
	return ReasonPlatformMismatch + " (" + set + ")"
}

// Filter rejects nodes whose os/arch (and Windows build) the pod's images do
// not support, all with the cycle's one reason. The accept path does not
// allocate, the reject path once per rejectionChunk nodes. A node that reports
// no os/arch at all is accepted: there is nothing to judge it by.
func (pl *ArchFilter) Filter(_ context.Context, state fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := pl.filterState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if s.allowed.of(nodeInfo.Node()) {
		return nil
	}
	nodeRejections.Inc()
	return s.rejected.status()
}

// allows says whether set allows a node's platform. A node that reports no
// os/arch is allowed: there is nothing to judge it by.
func allows(set platform.Set) func(np platform.NodePlatform, known bool) bool {
	return func(np platform.NodePlatform, known bool) bool { return !known || set.MatchesNode(np) }
}

// resolvedPlatforms is the set the pod may run on, and false when there is
// none (PreFilter would reject the pod); used by the queueing hints.
func (pl *ArchFilter) resolvedPlatforms(pod *v1.Pod) (platform.Set, bool) {
	d := pl.settingsFor(pod).Decide(pod, pl.lookupFor(pod))
	return d.Platforms, d.Rejection == nil
}

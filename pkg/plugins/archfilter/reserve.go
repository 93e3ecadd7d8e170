package archfilter

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/pkg/platform"
)

var _ fwk.ReservePlugin = &ArchFilter{}

// Reserve makes PreFilter's Skip safe. PreFilter skips Filter when the pod's
// platforms allow every platform of the node table; the table is fed by its own
// informer handler and may not yet hold a node that is already in the scheduler's
// snapshot. So Reserve, called once per pod with the node the cycle chose, checks
// that node's labels in the snapshot and, when the pod cannot run there, fails the
// cycle: the scheduler forgets the assumed pod, and nothing is bound. It also
// activates the pod, whose rejection no cluster event would undo (the node is
// already in the scheduler's cache), so it is retried after its backoff, when the
// table has caught up and Filter rejects the node. For a pod whose Filter ran,
// or that ArchFilter leaves alone, Reserve only reads the cycle state. Memory
// only; the accept path does not allocate.
func (pl *ArchFilter) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, err := readState(state)
	if err != nil || !s.filterSkipped {
		return nil
	}
	info, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("%s: node %q chosen for pod %s/%s is not in the snapshot: %w", Name, nodeName, pod.Namespace, pod.Name, err))
	}
	np, known := platform.FromNode(info.Node())
	if !known || s.set.MatchesNode(np) {
		return nil
	}
	reserveRejections.Inc()
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Node chosen before ArchFilter's node table knew its platform; retrying the pod",
		"pod", klog.KObj(pod), "node", nodeName, "nodePlatform", np.String(), "platforms", s.set.String())
	pl.handle.Activate(logger, map[string]*v1.Pod{podKey(pod): pod})
	// Filter's reason, for the one node chosen: the scheduler reports this status
	// alone (no count to aggregate), so it names the node and its platform.
	return statusf(fwk.Unschedulable, "%s: node %s is %s, a platform new to ArchFilter's node table; retrying", mismatchReason(s.set.String()), nodeName, np.String())
}

// Unreserve has nothing to undo: Reserve changes no state.
func (pl *ArchFilter) Unreserve(context.Context, fwk.CycleState, *v1.Pod, string) {}

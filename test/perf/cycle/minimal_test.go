package cycle

import (
	"context"
	"errors"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// The minimal plugin's names: in the minimal profile, and in the minimal-all profile
// where it allows every node architecture.
const (
	minimalName    = "MinimalArchFilter"
	minimalAllName = "MinimalArchFilterAll"
)

// reasonArchNotAllowed is the minimal plugin's rejection.
const reasonArchNotAllowed = "node(s) didn't match the allowed architectures"

// minimalArchFilter is the smallest Filter plugin that rejects the nodes ArchFilter
// rejects for a pod: it reads the node's kubernetes.io/arch label and rejects the
// architectures outside a set fixed when it is built, with a status of its own per
// rejection (the framework writes into statuses, so every plugin allocates one). It
// has no PreFilter, no Score and no registry: a profile with it measures what
// rejecting those nodes costs the scheduler, whoever rejects them.
type minimalArchFilter struct {
	name    string
	allowed []string
}

var _ fwk.FilterPlugin = &minimalArchFilter{}

// newMinimalArchFilter returns the factory of the plugin called name, allowing the
// architectures given.
func newMinimalArchFilter(name string, allowed ...string) func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return &minimalArchFilter{name: name, allowed: allowed}, nil
	}
}

func (pl *minimalArchFilter) Name() string { return pl.name }

func (pl *minimalArchFilter) Filter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if slices.Contains(pl.allowed, nodeInfo.Node().Labels[v1.LabelArchStable]) {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reasonArchNotAllowed)
}

// skipFloorName is the name of skipFloor, in the skip-floor profile.
const skipFloorName = "SkipFloor"

// skipFloor is a PreFilter and Filter plugin whose PreFilter returns Skip for every
// pod, so that its Filter is never called: a profile with it measures what the
// framework charges any Filter plugin that asks to be skipped (its PreFilter call,
// and the skip set looked up for every examined node), the floor under ArchFilter's
// cost for pods that run on every platform of the cluster.
type skipFloor struct{}

var (
	_ fwk.PreFilterPlugin = skipFloor{}
	_ fwk.FilterPlugin    = skipFloor{}
)

func newSkipFloor(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return skipFloor{}, nil
}

func (skipFloor) Name() string { return skipFloorName }

func (skipFloor) PreFilter(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return nil, fwk.NewStatus(fwk.Skip)
}

func (skipFloor) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (skipFloor) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status {
	return fwk.AsStatus(errors.New("SkipFloor's Filter was called although its PreFilter returned Skip"))
}

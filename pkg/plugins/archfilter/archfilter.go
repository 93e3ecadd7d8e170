// Package archfilter is the scheduler framework adapter of archfilter: it turns
// the platforms an image runs on into PreFilter/Filter decisions for a pod.
package archfilter

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/apis/config/validation"
)

// Name is the plugin name used in KubeSchedulerConfiguration profiles.
const Name = "ArchFilter"

// ArchFilter keeps pods off nodes whose os/architecture cannot run their images.
type ArchFilter struct {
	handle framework.Handle
	args   *config.ArchFilterArgs
}

var (
	_ framework.PreFilterPlugin = &ArchFilter{}
	_ framework.FilterPlugin    = &ArchFilter{}
)

// New validates args and builds the plugin.
func New(_ context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*config.ArchFilterArgs)
	if !ok {
		return nil, fmt.Errorf("want args to be of type ArchFilterArgs, got %T", obj)
	}
	if err := validation.ValidateArchFilterArgs(field.NewPath("args"), args); err != nil {
		return nil, err
	}
	return &ArchFilter{handle: h, args: args}, nil
}

// Name returns the plugin name.
func (pl *ArchFilter) Name() string { return Name }

// PreFilter does not constrain any pod yet: image platform resolution arrives
// with the resolver, so every pod is allowed on every node.
func (pl *ArchFilter) PreFilter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, _ []fwk.NodeInfo) (*framework.PreFilterResult, *fwk.Status) {
	return nil, fwk.NewStatus(fwk.Skip)
}

// PreFilterExtensions returns nil: ArchFilter's decision does not depend on
// other pods, so preemption needs no incremental updates.
func (pl *ArchFilter) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter accepts every node until the pod's platform set is known.
func (pl *ArchFilter) Filter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, _ fwk.NodeInfo) *fwk.Status {
	return nil
}

package schedulercmd

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	k8sversion "k8s.io/component-base/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/archfilter/archfilter/internal/schedfw"
	"github.com/archfilter/archfilter/pkg/version"
)

// SchedulerPluginsFlavour is the flavour that carries sigs.k8s.io/scheduler-plugins.
const SchedulerPluginsFlavour = "k8s1.34"

// SchedulerPluginsNames are the plugins of sigs.k8s.io/scheduler-plugins
// v0.34.7 that the k8s1.34 flavour registers (all its image registers). Only
// that flavour can carry them: scheduler-plugins has no release for the
// framework of Kubernetes 1.35 and later. cmd/scheduler-plugins' test checks
// this list against what it really registers.
var SchedulerPluginsNames = []string{
	"CapacityScheduling", "Coscheduling", "LoadVariationRiskBalancing", "LowRiskOverCommitment",
	"NetworkOverhead", "TopologicalSort", "NodeResourcesAllocatable", "NodeResourceTopologyMatch",
	"Peaks", "PodState", "PreemptionToleration", "QOSSort", "SySched", "TargetLoadPacking",
}

// NotInThisFlavour registers each scheduler-plugins name with a factory that
// fails, so that a configuration enabling one stops the scheduler at start
// with an error naming the plugin and the flavour that carries it, instead of
// upstream's bare "plugin does not exist".
func NotInThisFlavour() []app.Option {
	opts := make([]app.Option, 0, len(SchedulerPluginsNames))
	for _, name := range SchedulerPluginsNames {
		opts = append(opts, app.WithPlugin(name, func(context.Context, runtime.Object, schedfw.Handle) (schedfw.Plugin, error) {
			return nil, fmt.Errorf("plugin %q is part of sigs.k8s.io/scheduler-plugins v0.34.7, which this build (archfilter %s, Kubernetes %s) does not carry: use the %s flavour (image tag %s-%s), which has every scheduler-plugins plugin",
				name, version.Version, kubernetesVersion(), SchedulerPluginsFlavour, version.Version, SchedulerPluginsFlavour)
		}))
	}
	return opts
}

// kubernetesVersion is the Kubernetes version this binary was built from.
func kubernetesVersion() string { return k8sversion.Get().GitVersion }

package schedulercmd

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	k8sversion "k8s.io/component-base/version"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/archfilter/archfilter/pkg/version"
)

// Flavours names plugins that one flavour carries and the other cannot.
type Flavours struct {
	// Names are the plugins.
	Names []string
	// What they are, for the error: "part of sigs.k8s.io/scheduler-plugins v0.35.4-devel".
	What string
	// Flavour is the flavour that carries them, and TagSuffix its image tag's.
	Flavour, TagSuffix string
}

// SchedulerPlugins are the plugins of sigs.k8s.io/scheduler-plugins the
// k8s1.35 flavour registers (all its image registers). Only that flavour can
// carry them: scheduler-plugins has no release for the framework of
// Kubernetes 1.36 and later. cmd/scheduler-plugins' test pins this list to
// what it really registers.
var SchedulerPlugins = Flavours{
	Names: []string{
		"CapacityScheduling", "Coscheduling", "LoadVariationRiskBalancing", "LowRiskOverCommitment",
		"NetworkOverhead", "TopologicalSort", "NodeResourcesAllocatable", "NodeResourceTopologyMatch",
		"Peaks", "PodState", "PreemptionToleration", "QOSSort", "SySched", "TargetLoadPacking",
	},
	What:      "part of sigs.k8s.io/scheduler-plugins " + SchedulerPluginsVersion,
	Flavour:   "k8s1.35",
	TagSuffix: "-k8s1.35",
}

// SchedulerPluginsVersion is the sigs.k8s.io/scheduler-plugins release the
// k8s1.35 flavour is built with (go.k8s1.35.mod; cmd/scheduler-plugins' test
// pins it to the module graph).
const SchedulerPluginsVersion = "v0.35.4-devel"

// InTreeSince136 are kube-scheduler's own plugins added after 1.35, which
// only the main line carries. cmd/scheduler's test pins this list to the main
// line's in-tree registry, cmd/scheduler-plugins' to their absence from 1.35's.
var InTreeSince136 = Flavours{
	Names:   []string{"DeferredPodScheduling", "PodGroupPodsCount", "TopologyPlacementGenerator"},
	What:    "an in-tree plugin of Kubernetes 1.36 or later",
	Flavour: "main line",
}

// NotInThisFlavour registers each of f.Names with a factory that fails, so
// that a configuration enabling one stops the scheduler at start with an
// error naming the plugin and the flavour that carries it, instead of
// upstream's bare "plugin does not exist".
func NotInThisFlavour(f Flavours) []app.Option {
	opts := make([]app.Option, 0, len(f.Names))
	for _, name := range f.Names {
		opts = append(opts, app.WithPlugin(name, func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return nil, fmt.Errorf("plugin %q is %s, which this build (archfilter %s, Kubernetes %s) does not carry: use the %s flavour (image tag <version>%s)",
				name, f.What, version.Version, k8sversion.Get().GitVersion, f.Flavour, f.TagSuffix)
		}))
	}
	return opts
}

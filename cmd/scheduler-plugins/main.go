// Command archfilter-scheduler, k8s1.35 flavour: kube-scheduler v1.35 with the
// ArchFilter plugin and every plugin of sigs.k8s.io/scheduler-plugins
// (schedulercmd.SchedulerPluginsVersion) registered, so it is a drop-in
// superset of the scheduler-plugins image.
//
// It builds only against go.k8s1.35.mod (make build-k8s1.35):
//
//	go build -modfile=go.k8s1.35.mod -tags k8s1.35 ./cmd/scheduler-plugins
//
// go.mod, the main line, ignores this directory.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme" // scheduler-plugins args
	"sigs.k8s.io/scheduler-plugins/pkg/capacityscheduling"
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"
	"sigs.k8s.io/scheduler-plugins/pkg/networkaware/networkoverhead"
	"sigs.k8s.io/scheduler-plugins/pkg/networkaware/topologicalsort"
	"sigs.k8s.io/scheduler-plugins/pkg/noderesources"
	"sigs.k8s.io/scheduler-plugins/pkg/noderesourcetopology"
	"sigs.k8s.io/scheduler-plugins/pkg/podstate"
	"sigs.k8s.io/scheduler-plugins/pkg/preemptiontoleration"
	"sigs.k8s.io/scheduler-plugins/pkg/qos"
	"sigs.k8s.io/scheduler-plugins/pkg/sysched"
	"sigs.k8s.io/scheduler-plugins/pkg/trimaran/loadvariationriskbalancing"
	"sigs.k8s.io/scheduler-plugins/pkg/trimaran/lowriskovercommitment"
	"sigs.k8s.io/scheduler-plugins/pkg/trimaran/peaks"
	"sigs.k8s.io/scheduler-plugins/pkg/trimaran/targetloadpacking"

	"github.com/archfilter/archfilter/internal/schedulercmd"
)

// Options lists every out-of-tree plugin this binary registers: ArchFilter's,
// every plugin the sigs.k8s.io/scheduler-plugins image registers, and the
// names of newer in-tree plugins, which fail with a pointer to the main line. Its
// CrossNodePreemption sample is left out there too: its New still has the
// pre-context factory signature and is not meant for production.
func Options() []app.Option {
	opts := append(schedulercmd.ArchFilterPlugins(),
		app.WithPlugin(capacityscheduling.Name, capacityscheduling.New),
		app.WithPlugin(coscheduling.Name, coscheduling.New),
		app.WithPlugin(loadvariationriskbalancing.Name, loadvariationriskbalancing.New),
		app.WithPlugin(lowriskovercommitment.Name, lowriskovercommitment.New),
		app.WithPlugin(networkoverhead.Name, networkoverhead.New),
		app.WithPlugin(topologicalsort.Name, topologicalsort.New),
		app.WithPlugin(noderesources.AllocatableName, noderesources.NewAllocatable),
		app.WithPlugin(noderesourcetopology.Name, noderesourcetopology.New),
		app.WithPlugin(peaks.Name, peaks.New),
		app.WithPlugin(podstate.Name, podstate.New),
		app.WithPlugin(preemptiontoleration.Name, preemptiontoleration.New),
		app.WithPlugin(qos.Name, qos.New),
		app.WithPlugin(sysched.Name, sysched.New),
		app.WithPlugin(targetloadpacking.Name, targetloadpacking.New),
	)
	// Naming a plugin only the main line's kube-scheduler has fails at start,
	// naming the main line.
	return append(opts, schedulercmd.NotInThisFlavour(schedulercmd.InTreeSince136)...)
}

func main() {
	os.Exit(cli.Run(schedulercmd.New(Options()...)))
}

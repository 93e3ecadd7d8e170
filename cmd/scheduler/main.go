// Command archfilter-scheduler is kube-scheduler with the ArchFilter plugin and
// every plugin of sigs.k8s.io/scheduler-plugins registered, so it is a drop-in
// superset of the scheduler-plugins image.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go request metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // build info metric
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

	_ "github.com/archfilter/archfilter/apis/config/scheme" // ArchFilterArgs
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
	"github.com/archfilter/archfilter/pkg/version"
)

// Options lists every out-of-tree plugin this binary carries. Tests build the
// scheduler from the same list, so what they check is what ships.
func Options() []app.Option {
	return []app.Option{
		app.WithPlugin(archfilter.Name, archfilter.New),
		// TaintToleration plus archTaintToleration; a profile swaps it in.
		app.WithPlugin(archfilter.TaintTolerationName, archfilter.NewTaintToleration),
		// Every plugin the sigs.k8s.io/scheduler-plugins image registers. Its
		// CrossNodePreemption sample is left out there too: its New still has
		// the pre-context factory signature and is not meant for production.
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
	}
}

func main() {
	os.Exit(cli.Run(newCommand()))
}

func newCommand() *cobra.Command {
	cmd := app.NewSchedulerCommand(Options()...)
	cmd.Use = "archfilter-scheduler"
	// kube-scheduler's --version prints only the Kubernetes version and exits
	// inside RunE; print archfilter's own identity first.
	upstream := cmd.PersistentPreRunE
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if f := c.Flags().Lookup("version"); f != nil && f.Value.String() != "false" {
			fmt.Fprintln(c.OutOrStdout(), version.String())
		}
		return upstream(c, args)
	}
	return cmd
}

// Command archfilter-scheduler is kube-scheduler with the ArchFilter plugin:
// the main line, built against the newest Kubernetes minor archfilter
// supports. The plugins of sigs.k8s.io/scheduler-plugins are in the k8s1.35
// flavour (cmd/scheduler-plugins); naming one here fails at start and says so.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/archfilter/archfilter/internal/schedulercmd"
)

// Options lists every out-of-tree plugin this binary registers. Tests build the
// scheduler from the same list, so what they check is what ships.
func Options() []app.Option {
	return append(schedulercmd.ArchFilterPlugins(), schedulercmd.NotInThisFlavour(schedulercmd.SchedulerPlugins)...)
}

func main() {
	os.Exit(cli.Run(schedulercmd.New(Options()...)))
}

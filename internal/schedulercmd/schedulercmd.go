// Package schedulercmd builds the archfilter-scheduler command: upstream
// kube-scheduler's command with archfilter's identity in --version and the
// plugins a flavour registers. Every flavour's main calls it, so the flavours
// differ only in their plugin lists.
package schedulercmd

import (
	"fmt"

	"github.com/spf13/cobra"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go request metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // build info metric
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	_ "github.com/archfilter/archfilter/apis/config/scheme" // ArchFilterArgs
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
	"github.com/archfilter/archfilter/pkg/version"
)

// ArchFilterPlugins registers the plugins every flavour carries.
func ArchFilterPlugins() []app.Option {
	return []app.Option{
		app.WithPlugin(archfilter.Name, archfilter.New),
		// TaintToleration plus archTaintToleration; a profile swaps it in.
		app.WithPlugin(archfilter.TaintTolerationName, archfilter.NewTaintToleration),
	}
}

// New is kube-scheduler's command named archfilter-scheduler, with the given
// plugin registrations.
func New(opts ...app.Option) *cobra.Command {
	cmd := app.NewSchedulerCommand(opts...)
	cmd.Use = "archfilter-scheduler"
	// kube-scheduler's --version prints only the Kubernetes version and exits
	// inside RunE; print archfilter's own identity first.
	upstream := cmd.PersistentPreRunE
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if f := c.Flags().Lookup("version"); f != nil && f.Value.String() != "false" {
			fmt.Fprintln(c.OutOrStdout(), version.String())
		}
		if err := honourKubeconfigFlag(c); err != nil {
			return err
		}
		if err := refuseSilentSettings(c); err != nil {
			return err
		}
		if err := refuseOlderAPIServer(c); err != nil {
			return err
		}
		return upstream(c, args)
	}
	if f := cmd.Flags().Lookup("kubeconfig"); f != nil {
		f.Usage = kubeconfigFlagUsage
	}
	// What the chart's uninstall hook runs, from the scheduler's image. The
	// scheduler's own command line is unchanged: no completion command.
	cmd.AddCommand(preUninstallCommand())
	cmd.CompletionOptions.DisableDefaultCmd = true
	return cmd
}

package schedulercmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/archfilter/archfilter/internal/scheduleruninstall"
)

// preUninstallCommand is `archfilter-scheduler pre-uninstall`, run by the Helm
// chart's pre-delete hook from the scheduler's own image. It has its own
// flags and none of kube-scheduler's, and skips kube-scheduler's start-up.
func preUninstallCommand() *cobra.Command {
	o := scheduleruninstall.Options{}
	var kubeconfig, lease string
	cmd := &cobra.Command{
		Use:   "pre-uninstall --scheduler-name NAME [flags]",
		Short: "Check that the scheduler can be removed, stop its Deployment and delete its leader-election Lease",
		Long: `pre-uninstall is what helm uninstall runs (a pre-delete hook) before it deletes
the scheduler. It refuses while pods not yet finished name --scheduler-name in
spec.schedulerName: once the scheduler is gone they, and the pods their
controllers create, stay Pending. For the default profile (default-scheduler,
the chart's replacement mode) every pod that names no scheduler needs another
scheduler instead: it stops this one and waits for another to take the shared
--lease over, and scales the Deployment back and refuses if none does. Then it
stops --deployment (scaled to zero, its pods gone) and deletes --lease, unless
--lease-shared. --force turns a refusal into a warning.`,
		Args: cobra.NoArgs,
		// Not kube-scheduler's start-up: no feature gates, no configuration.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(c *cobra.Command, _ []string) error {
			if lease != "" {
				ns, name, ok := strings.Cut(lease, "/")
				if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
					return fmt.Errorf("--lease %q: want NAMESPACE/NAME", lease)
				}
				o.LeaseNamespace, o.LeaseName = ns, name
			}
			if o.Deployment != "" && o.Namespace == "" {
				return fmt.Errorf("--deployment %s needs --namespace", o.Deployment)
			}
			restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig: %w", err)
			}
			client, err := kubernetes.NewForConfig(restConfig)
			if err != nil {
				return err
			}
			o.Out = c.OutOrStdout()
			return scheduleruninstall.Run(c.Context(), client, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig file; empty: in-cluster (the pod's ServiceAccount).")
	fs.StringVar(&o.SchedulerName, "scheduler-name", "", "The profile's schedulerName (required).")
	fs.StringVar(&o.Namespace, "namespace", "", "The namespace of --deployment.")
	fs.StringVar(&o.Deployment, "deployment", "", "The scheduler's Deployment, stopped before its Lease is deleted or handed over.")
	fs.StringVar(&lease, "lease", "", "NAMESPACE/NAME of the scheduler's leader-election Lease; empty: none.")
	fs.BoolVar(&o.LeaseShared, "lease-shared", false, "The Lease is shared with another scheduler of the same profile (the control plane's kube-scheduler): kept, and taken over.")
	fs.BoolVar(&o.Force, "force", false, "Warn instead of refusing.")
	fs.StringVar(&o.HowToForce, "how-to-force", "", "Appended to a refusal: how to remove the scheduler anyway.")
	fs.DurationVar(&o.StopTimeout, "stop-timeout", scheduleruninstall.DefaultStopTimeout, "How long the Deployment's pods may take to go.")
	fs.DurationVar(&o.TakeoverTimeout, "takeover-timeout", scheduleruninstall.DefaultTakeoverTimeout, "How long another scheduler may take to take the shared Lease over.")
	// kube-scheduler's usage lists its own flag sets, which this command
	// does not have.
	usage := func(w io.Writer, c *cobra.Command) {
		fmt.Fprintf(w, "Usage:\n  %s\n\nFlags:\n%s", c.UseLine(), c.LocalFlags().FlagUsages())
	}
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		usage(c.OutOrStderr(), c)
		return nil
	})
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		fmt.Fprintf(c.OutOrStdout(), "%s\n\n", c.Long)
		usage(c.OutOrStdout(), c)
	})
	return cmd
}

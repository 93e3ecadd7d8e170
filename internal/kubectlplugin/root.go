// Package kubectlplugin is the kubectl archfilter command: it answers, from registry
// manifests through pkg/resolver, which platforms images and workloads run on. The
// binary in cmd/kubectl-archfilter only calls NewCommand.
package kubectlplugin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// Exit statuses, the same for every command (docs/kubectl-plugin.md, "Exit status"): 0
// when every item was answered and nothing was found that cannot run; ExitFailed when the
// answer is that a workload or pod cannot run (its images share no platform, it runs on
// none of the cluster's nodes, or it misses --platforms); ExitInputError when some item
// could not be answered (a flag, file or document that could not be read, an unknown
// kind, an image that could not be resolved, a cluster object that could not be read).
// The second wins over the first, so a CI job can tell an incomplete answer from a
// workload that does not fit; in both cases every other item is still reported.
const (
	ExitFailed     = 1 // a finding: a workload or pod cannot run
	ExitInputError = 2 // an item could not be answered
)

// ExitError carries the exit status for main; the details were already printed per item.
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }

// ExitCode returns the exit status for err: 0 for nil, ExitError's Code, else
// ExitInputError: any other error (a usage error from cobra, a pod that does not exist, a
// list the cluster refused) means the question could not be answered.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitInputError
}

// NewCommand returns the kubectl-archfilter root command.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	kube := genericclioptions.NewConfigFlags(true)
	configureClients(kube)
	var logs logFlags
	cmd := &cobra.Command{
		Use:   "kubectl-archfilter",
		Short: "Which platforms images and workloads run on, from their registry manifests",
		Long: `Which platforms images and workloads run on, read from their registry manifests with
archfilter's resolver (docs/kubectl-plugin.md).

Exit status, the same for every command: 0 when every item was answered and can run;
1 when a workload or pod cannot run; 2 when an item could not be answered (a file or
document that could not be read, an unknown kind, an image that could not be
resolved, a usage error), which wins over 1. The other items are still answered.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl archfilter"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	kube.AddFlags(cmd.PersistentFlags())
	logs.add(cmd.PersistentFlags())
	cmd.PersistentPreRun = func(cmd *cobra.Command, _ []string) { logs.apply(cmd, streams.ErrOut) }
	cmd.AddCommand(newInspectCommand(kube, streams), newCheckCommand(kube, streams), newWhyCommand(kube, streams), newReportCommand(kube, streams))
	for _, sub := range cmd.Commands() {
		stopWhenDone(sub)
	}
	cmd.AddCommand(newOptionsCommand())
	cmd.SetUsageFunc(usage)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nSee '%s --help' for usage.", err, c.CommandPath())
	})
	addCompletions(cmd, kube)
	return cmd
}

// logFlags are kubectl's -v and --vmodule. Without them klog (client-go's lines, such
// as "Waited for … due to client-side throttling", and the resolver's) prints nothing:
// stderr carries only what the command reports itself.
type logFlags struct {
	verbosity int
	vmodule   string
}

func (l *logFlags) add(fs *pflag.FlagSet) {
	fs.IntVarP(&l.verbosity, "v", "v", 0, "log level: client-go's and archfilter's log lines up to this level go to stderr (none without -v)")
	fs.StringVar(&l.vmodule, "vmodule", "", "PATTERN=N,...: per-file log levels (as -v, for the Go files matching PATTERN)")
}

// apply sets klog, which is global, for this run: discarded unless -v or --vmodule is
// given, else written to errOut up to that level.
func (l *logFlags) apply(cmd *cobra.Command, errOut io.Writer) {
	on := cmd.Flags().Changed("v") || l.vmodule != ""
	level := 0
	if on {
		level = l.verbosity
	}
	// klog's own level filters its V(n) calls before they reach the logger; set it
	// every run, since a process (a test) may run the command more than once.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", strconv.Itoa(level))
	_ = fs.Set("vmodule", l.vmodule)
	if !on {
		klog.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(io.Discard))))
		return
	}
	cfg := textlogger.NewConfig(textlogger.Output(errOut), textlogger.Verbosity(level))
	_ = cfg.VModule().Set(l.vmodule)
	klog.SetLogger(textlogger.NewLogger(cfg))
}

// globalFlagsHint points from each command's help to the flags every command takes, as
// kubectl's help points to "kubectl options".
const globalFlagsHint = `Use "kubectl archfilter options" for a list of global command-line options (--kubeconfig, --context, -n, -v and kubectl's others; they apply to all commands).`

// newOptionsCommand lists the flags every command takes (kubectl's connection flags,
// -v), which each command's help leaves out, as "kubectl options" does.
func newOptionsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "options",
		Short: "Print the list of flags inherited by all commands",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			writeLine(w, "The following options can be passed to any command:\n")
			_, err := io.WriteString(w, cmd.Root().PersistentFlags().FlagUsages())
			return err
		},
	}
}

// usage is every command's usage: its own flags, then one line pointing to the
// options command, as kubectl prints it (k8s.io/kubectl/pkg/util/templates), so that
// a command's flags are not lost after the twenty-odd it shares with every other.
func usage(c *cobra.Command) error {
	var b strings.Builder
	switch {
	case c.HasAvailableSubCommands():
		fmt.Fprintf(&b, "Usage:\n  %s [command]\n", c.CommandPath())
	case c.Runnable():
		fmt.Fprintf(&b, "Usage:\n  %s\n", c.UseLine())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(&b, "\nAliases:\n  %s\n", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", strings.TrimRight(c.Example, " \n"))
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\nAvailable Commands:\n")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "  %-*s %s\n", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	if own := ownFlags(c); own.HasAvailableFlags() {
		fmt.Fprintf(&b, "\nFlags:\n%s", own.FlagUsages())
	}
	b.WriteString("\n" + globalFlagsHint + "\n")
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "Use \"%s [command] --help\" for more information about a command.\n", c.CommandPath())
	}
	_, err := io.WriteString(c.OutOrStderr(), b.String())
	return err
}

// ownFlags are c's flags without those every command takes (the root's persistent
// flags).
func ownFlags(c *cobra.Command) *pflag.FlagSet {
	global := c.Root().PersistentFlags()
	own := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if global.Lookup(f.Name) == nil {
			own.AddFlag(f)
		}
	})
	return own
}

// stopWhenDone cancels the command's context when it returns, so whatever the command
// started with it (its resolver's requests, its credential store's GETs) ends then, also
// when the command runs inside a longer-lived process (a test, or a program embedding it).
func stopWhenDone(cmd *cobra.Command) {
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx, cancel := context.WithCancel(cmd.Context())
		defer cancel()
		cmd.SetContext(ctx)
		return run(cmd, args)
	}
}

// outputFormat is the -o flag's value.
type outputFormat string

const (
	outputTable outputFormat = "table"
	outputJSON  outputFormat = "json"
	outputYAML  outputFormat = "yaml"
)

func addOutputFlag(cmd *cobra.Command, p *string, formats ...outputFormat) {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = string(f)
	}
	cmd.Flags().StringVarP(p, "output", "o", string(formats[0]), fmt.Sprintf("output format: %v", names))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(names, cobra.ShellCompDirectiveNoFileComp))
}

func checkOutput(o string, formats ...outputFormat) error {
	for _, f := range formats {
		if o == string(f) {
			return nil
		}
	}
	return &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("--output %q: want one of %v", o, formats)}
}

func writeLine(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, format+"\n", args...)
}

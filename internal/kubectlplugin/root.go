// Package kubectlplugin is the kubectl archfilter command: it answers, from registry
// manifests through pkg/resolver, which platforms images and workloads run on. The
// binary in cmd/kubectl-archfilter only calls NewCommand.
package kubectlplugin

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
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
	cmd.AddCommand(newInspectCommand(kube, streams), newCheckCommand(kube, streams), newWhyCommand(kube, streams), newReportCommand(kube, streams))
	for _, sub := range cmd.Commands() {
		stopWhenDone(sub)
	}
	addCompletions(cmd, kube)
	return cmd
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

// Command kubectl-archfilter is the kubectl plugin "kubectl archfilter": image
// platforms, manifest checks for CI, and why a pod can run where (docs/kubectl-plugin.md).
package main

import (
	"fmt"
	"io"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/archfilter/archfilter/internal/kubectlplugin"
)

func main() {
	// klog writes to stderr by default. The command sets it from -v once its flags are
	// parsed; until then (flag errors, shell completion) nothing it logs reaches the
	// terminal, where only the command's own errors belong.
	klog.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(io.Discard))))
	// The API server's warnings (a deprecated API, a policy's warn mode) are not
	// klog's to hide: they go to stderr, each once, as kubectl prints them.
	rest.SetDefaultWarningHandler(rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true}))
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	err := kubectlplugin.NewCommand(streams).Execute()
	if err != nil && err.Error() != "" {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	os.Exit(kubectlplugin.ExitCode(err))
}

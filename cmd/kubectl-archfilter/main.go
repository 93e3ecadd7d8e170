// Command kubectl-archfilter is the kubectl plugin "kubectl archfilter": image
// platforms, manifest checks for CI, and why a pod can run where (docs/kubectl-plugin.md).
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/archfilter/archfilter/internal/kubectlplugin"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	err := kubectlplugin.NewCommand(streams).Execute()
	if err != nil && err.Error() != "" {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	os.Exit(kubectlplugin.ExitCode(err))
}

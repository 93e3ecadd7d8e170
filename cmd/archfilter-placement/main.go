// Command archfilter-placement is ArchFilter's placement mode: a mutating
// webhook that gates new pods and a controller that writes the node affinity
// their images need and removes the gate, for any scheduler and autoscaler.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/archfilter/archfilter/internal/placement/app"
)

func main() {
	os.Exit(cli.Run(app.NewCommand()))
}

// Package version holds archfilter's own build identity, stamped by the
// Makefile through -ldflags (the Kubernetes version is stamped separately into
// k8s.io/component-base/version).
package version

import (
	"fmt"
	"runtime"
)

// Set with -ldflags "-X github.com/archfilter/archfilter/pkg/version.Version=…".
var (
	Version   = "v0.0.0-dev"
	GitCommit = "unknown"
	BuildDate = "unknown"
)

// String is the one-line form printed by --version. It names the Go toolchain
// the binary was built with, which a scanner's verdict on the standard
// library depends on.
func String() string {
	return fmt.Sprintf("archfilter %s (commit %s, built %s, %s)", Version, GitCommit, BuildDate, runtime.Version())
}

// Command hello is the e2e-node suite's workload: a static program that
// prints the platform it was built for and exits. Built for linux/arm64 only
// it shows the real exec format error on an amd64 node; built for several
// platforms it shows the node ran the right one.
package main

import (
	"fmt"
	"runtime"
)

func main() {
	fmt.Printf("hello from %s/%s\n", runtime.GOOS, runtime.GOARCH)
}

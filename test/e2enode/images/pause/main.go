// Command pause is the real node's sandbox image (containerd's sandbox_image):
// it holds a pod's namespaces until it is told to stop, like
// registry.k8s.io/pause, which this machine cannot download.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}

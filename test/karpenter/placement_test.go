package karpenter

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

// startPlacement runs the placement mode's companion (cmd/archfilter-placement,
// PLACEMENT_BIN) as a host process serving its webhook on loopback. Until the
// tree has it, hack/karpenter/e2e.sh leaves PLACEMENT_BIN unset and the
// scenario is skipped, saying so.
func startPlacement(ctx context.Context, t *testing.T, c *cluster) *framework.Process {
	t.Helper()
	bin := os.Getenv("PLACEMENT_BIN")
	if bin == "" {
		t.Skip("the placement mode is not built: cmd/archfilter-placement is not in this tree yet (hack/karpenter/e2e.sh builds it once it is)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := []string{
		"--kubeconfig", c.kubeconfig,
		"--webhook-url", fmt.Sprintf("https://127.0.0.1:%d", port),
		"--insecure-registries", c.registry.PushHost,
	}
	p, err := framework.StartProcess(context.WithoutCancel(ctx), bin, filepath.Join(c.logDir, "placement.log"), args, nil)
	if err != nil {
		t.Fatalf("starting the placement companion: %v", err)
	}
	t.Cleanup(p.Stop)
	return p
}

// labelForPlacement opts namespace ns into the placement mode.
func labelForPlacement(context.Context, *testing.T, *cluster, string) {}

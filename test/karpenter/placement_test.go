package karpenter

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/archfilter/archfilter/test/e2e/framework"
	"k8s.io/apimachinery/pkg/util/wait"
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
	// Flags as docs/placement.md describes them for a host process: the
	// webhook registered by URL on loopback, the registry over plain HTTP,
	// the certificate in memory (no archfilter-system namespace here).
	args := []string{
		"--kubeconfig", c.kubeconfig,
		"--webhook-url", fmt.Sprintf("https://127.0.0.1:%d", port),
		"--insecure-registries", c.registry.PushHost,
		"--cert-secret=",
	}
	p, err := framework.StartProcess(context.WithoutCancel(ctx), bin, filepath.Join(c.logDir, "placement.log"), args, nil)
	if err != nil {
		t.Fatalf("starting the placement companion: %v", err)
	}
	t.Cleanup(p.Stop)
	// Ready when its webhook listens where --webhook-url says; a companion
	// that exits (a flag it does not know, say) fails here, with its log.
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("exited")
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	})
	if err != nil {
		t.Fatalf("the placement companion (%s %v) is not serving on %s: %v\n%s", bin, args, addr, err, p.Tail(30))
	}
	return p
}

package karpenter

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

const (
	// placementGate and placementWebhook are the companion's gate and the
	// MutatingWebhookConfiguration it owns (docs/placement.md).
	placementGate    = "archfilter.io/placement"
	placementWebhook = "archfilter-placement"
)

// placementBinary is cmd/archfilter-placement's binary, PLACEMENT_BIN.
func placementBinary(t *testing.T) string {
	t.Helper()
	return env(t, "PLACEMENT_BIN")
}

// startPlacement runs the placement mode's companion as a host process
// serving its webhook on loopback.
func startPlacement(ctx context.Context, t *testing.T, c *cluster) *framework.Process {
	t.Helper()
	bin := placementBinary(t)
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
	c.track(t, p, "placement")
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

// uninstallPlacement is docs/placement.md's uninstall after the companion
// went away without it: its webhook configuration is left behind and a pod
// still carries the gate (created here as the webhook would have left it).
// `archfilter-placement --remove-gates` must delete the configuration and
// leave no gated pod in the cluster.
func uninstallPlacement(ctx context.Context, t *testing.T, c *cluster) {
	t.Helper()
	bin := placementBinary(t)
	hooks := c.cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := hooks.Get(ctx, placementWebhook, metav1.GetOptions{}); err != nil {
		t.Fatalf("the stopped companion's MutatingWebhookConfiguration %s: %v (want it left behind, as after a plain delete)", placementWebhook, err)
	}
	const ns = "karpenter-uninstall"
	if err := framework.EnsureNamespace(ctx, c.cs, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.cs.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{}) })
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gated-when-the-companion-went", Namespace: ns},
		Spec: v1.PodSpec{
			// No scheduler picks it up, so Karpenter buys nothing for it.
			SchedulerName:   "no-scheduler",
			SchedulingGates: []v1.PodSchedulingGate{{Name: placementGate}},
			Containers:      []v1.Container{{Name: "main", Image: framework.ImageARM64Only.Ref(c.registry, c.registry)}},
		},
	}
	if _, err := c.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig", c.kubeconfig, "--remove-gates")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s --remove-gates: %v\n%s", bin, err, out)
	}
	if _, err := hooks.Get(ctx, placementWebhook, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after --remove-gates, MutatingWebhookConfiguration %s: want NotFound, got %v", placementWebhook, err)
	}
	pods, err := c.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, g := range p.Spec.SchedulingGates {
			if g.Name == placementGate {
				t.Errorf("after --remove-gates, pod %s/%s still has the gate %s", p.Namespace, p.Name, placementGate)
			}
		}
	}
}

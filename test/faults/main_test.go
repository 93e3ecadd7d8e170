//go:build !k8s1.35

// Package faults injects faults of the control plane into a running cluster
// while a burst of pods is scheduled, and measures what survives: the leading
// archfilter-scheduler killed (SIGKILL, SIGTERM), kube-apiserver and etcd
// restarted, a registry down during a failover, and the placement mode's
// controller killed, its webhook unreachable and the companion upgraded. Each
// case counts the pods lost, misplaced and left gated, the time from the
// fault to the first bind after it, and the registry requests of whoever took
// over; `make e2e-faults` writes the table into docs/reliability.md.
//
// It runs on the local KWOK cluster of hack/cluster (real etcd, kube-apiserver
// and kube-controller-manager; fake nodes of every architecture) with the
// local Distribution registries, as test/e2e does (E2E_PROVIDER=kwok). Without
// a cluster the tests skip, so `go test ./...` passes on a bare machine; a
// fault this machine cannot inject is reported as not run, never as passed.
//
// The suite runs the main line only (its bursts use 1.37's gang API,
// scheduling.k8s.io/v1beta1 PodGroups), hence the build constraint.
package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

var (
	env        *framework.Env
	skipReason string
	report     = &table{}
)

// The suite's own cluster and registries, so it can run beside make demo and make e2e.
var suiteEnv = map[string]string{
	"CLUSTER_NAME":          "archfilter-faults",
	"REGISTRY_SET":          "faults",
	"REGISTRY_PORT":         "5041",
	"PRIVATE_REGISTRY_PORT": "5042",
	// Kubernetes' gang scheduling (GenericWorkload, beta and off by default in
	// 1.37): some pods of the bursts are gangs.
	"KWOK_EXTRA_ARGS": "kube-apiserver=feature-gates=GenericWorkload=true kube-apiserver=runtime-config=scheduling.k8s.io/v1beta1=true",
}

func TestMain(m *testing.M) {
	for k, v := range suiteEnv {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	os.Exit(framework.RunSuite(m, "faults", burstImages(), func(e *framework.Env, reason string) { env, skipReason = e, reason }, func() error {
		if err := report.write(filepath.Join(framework.RepoRoot(), ".cache", "faults")); err != nil {
			return fmt.Errorf("writing the table: %w", err)
		}
		if os.Getenv("FAULTS_UPDATE_DOC") != "" {
			return report.updateDoc(filepath.Join(framework.RepoRoot(), "docs", "reliability.md"))
		}
		return nil
	}))
}

// setup skips without a cluster, and gives the test an empty namespace of its own.
func setup(t *testing.T) (context.Context, string) {
	t.Helper()
	if env == nil {
		report.notRun(t.Name(), skipReason)
		t.Skip(skipReason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	ns := dnsName("faults-" + t.Name())
	newNamespace(ctx, t, ns)
	return ctx, ns
}

// newNamespace creates ns, deleted after the test, and waits for its default
// ServiceAccount, without which no pod can be created in it: the
// kube-controller-manager creates it, and after a control-plane fault it may
// be waiting for its lease.
func newNamespace(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	if err := framework.ResetNamespace(ctx, env.Client, ns); err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Namespaces().Delete(context.Background(), ns, deleteNow)
	})
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("namespace %s has no default ServiceAccount after 2 minutes (is kube-controller-manager running?): %v", ns, err)
	}
}

// logDir is where a test's processes write their logs.
func logDir(t *testing.T) string {
	dir := filepath.Join(framework.RepoRoot(), ".cache", "faults", "logs", dnsName(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

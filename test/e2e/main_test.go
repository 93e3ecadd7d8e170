// Package e2e tests the archfilter-scheduler binary on a real cluster, black
// box, through client-go: a local KWOK cluster (`make e2e`), a kind cluster
// (`make e2e-kind`, Docker hosts) or any KWOK cluster already up
// (E2E_KUBECONFIG). Without one of those the tests skip, so `go test ./...`
// passes on a bare machine.
//
// Tests named TestArchFilter* need the plugin's real behaviour (registry
// resolution, filtering); the others hold for any kube-scheduler build and
// check the binary, its configs, leader election and restarts.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

var (
	env        *framework.Env
	skipReason string
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, "e2e", framework.AllImages, func(e *framework.Env, reason string) { env, skipReason = e, reason }, nil))
}

// setup skips without a cluster, and gives the test an empty namespace of its
// own (with a pull secret for the private registry), deleted afterwards.
func setup(t *testing.T) (context.Context, string) {
	t.Helper()
	if env == nil {
		t.Skip(skipReason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	ns := dnsName("e2e-" + t.Name())
	if err := framework.ResetNamespace(ctx, env.Client, ns); err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	if err := framework.ApplyPullSecret(ctx, env.Client, ns, pullSecret, env.Private); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpPods(t, ns)
		}
		_ = env.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return ctx, ns
}

const pullSecret = "registry"

// dnsName is framework.DNSName.
var dnsName = framework.DNSName

// launch starts replicas of a secondary scheduler named after the test.
func launch(ctx context.Context, t *testing.T, replicas int, fast bool) framework.Group {
	t.Helper()
	return launchWith(ctx, t, framework.LaunchOptions{Replicas: replicas, FastLeaderElection: fast})
}

// launchWith is launch with more options; Name and LogDir are filled in.
func launchWith(ctx context.Context, t *testing.T, o framework.LaunchOptions) framework.Group {
	t.Helper()
	o.Name = dnsName("af-" + t.Name())
	o.LogDir = filepath.Join(framework.RepoRoot(), ".cache", "e2e", "logs", dnsName(t.Name()))
	g, err := env.Schedulers.Launch(ctx, o)
	if err != nil {
		t.Fatalf("starting the scheduler: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("scheduler logs:\n%s", g.Logs())
		}
		g.Stop(context.Background())
	})
	if _, err := g.Leader(ctx, time.Minute); err != nil {
		t.Fatalf("no leader: %v", err)
	}
	return g
}

func apply(ctx context.Context, t *testing.T, ns string, w framework.Workload) {
	t.Helper()
	if w.Image.Private && w.PullSecret == "" {
		w.PullSecret = pullSecret
	}
	if err := framework.ApplyDeployment(ctx, env.Client, w.Deployment(ns, env.Public, env.Private)); err != nil {
		t.Fatalf("deployment %s: %v", w.Name, err)
	}
}

// pod builds a bare pod of image for scheduler.
func pod(ns, name, image, scheduler string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{framework.LabelApp: name}},
		Spec: v1.PodSpec{
			SchedulerName:                 scheduler,
			Containers:                    []v1.Container{{Name: "main", Image: image}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
}

func dumpPods(t *testing.T, ns string) {
	rows, err := framework.Placement(context.Background(), env.Client, ns, nil)
	if err != nil {
		t.Logf("listing pods of %s: %v", ns, err)
		return
	}
	var b strings.Builder
	framework.PrintTable(&b, rows)
	t.Logf("pods of %s:\n%s", ns, b.String())
}

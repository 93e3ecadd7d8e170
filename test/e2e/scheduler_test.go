package e2e

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

// These scenarios hold for any correct kube-scheduler build: they check that
// the binary runs with the manifests' configs, places pods, survives leader
// changes and restarts. They pass with the skeleton plugin too.

// scheduledBy waits for the Scheduled event of every pod in ns and checks it
// came from scheduler.
func scheduledBy(ctx context.Context, t *testing.T, ns, scheduler string) {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		var by string
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			evs, err := framework.PodEvents(ctx, env.Client, p)
			if err != nil {
				return false, nil
			}
			by = framework.ScheduledBy(evs)
			return by != "", nil
		})
		if err != nil {
			t.Errorf("pod %s: no Scheduled event: %v", p.Name, err)
			continue
		}
		if by != scheduler {
			t.Errorf("pod %s was scheduled by %q, want %q", p.Name, by, scheduler)
		}
	}
}

func TestSecondarySchedulesMultiArchPod(t *testing.T) {
	ctx, ns := setup(t)
	g := launch(ctx, t, 1, false)
	p := pod(ns, "multiarch", framework.ImageMultiArch.Ref(env.Public, env.Private), g.SchedulerName())
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, "", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	scheduledBy(ctx, t, ns, g.SchedulerName())
}

func TestSecondaryPlacesEveryDeploymentPod(t *testing.T) {
	ctx, ns := setup(t)
	g := launch(ctx, t, 1, false)
	want := 0
	for _, im := range framework.AllImages {
		if im.Name == framework.ImageRISCV64Only.Name {
			continue // fits no node once ArchFilter filters
		}
		w := framework.Workload{Name: dnsName(im.Name), Image: im, Replicas: 3, SchedulerName: g.SchedulerName()}
		apply(ctx, t, ns, w)
		want += int(w.Replicas)
	}
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, "", want, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	scheduledBy(ctx, t, ns, g.SchedulerName())
}

func TestDefaultSchedulerReplacement(t *testing.T) {
	ctx, ns := setup(t)
	if !env.DefaultSchedulerIsArchFilter {
		t.Skipf("the %s provider's default scheduler is not archfilter", env.Provider)
	}
	apply(ctx, t, ns, framework.Workload{Name: "multiarch", Image: framework.ImageMultiArch, Replicas: 5})
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, "", 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	scheduledBy(ctx, t, ns, v1.DefaultSchedulerName)
	// The replacement profile keeps kube-scheduler's lease: one default scheduler at a time.
	lease, err := env.Client.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("lease kube-system/kube-scheduler: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("lease kube-system/kube-scheduler has no holder")
	}
}

package e2e

import (
	"context"
	"fmt"
	"sync"
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

// TestLeaderElectionFailover: two replicas; the leader is killed (SIGKILL, so
// it cannot release the lease) in the middle of a burst of pods; the other
// replica takes over and every pod is scheduled, none twice.
func TestLeaderElectionFailover(t *testing.T) {
	ctx, ns := setup(t)
	g := launch(ctx, t, 2, true)
	leader, err := g.Leader(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const total, killAt = 60, 20
	image := framework.ImageMultiArch.Ref(env.Public, env.Private)
	created := make(chan int, total)
	var wg sync.WaitGroup
	var createErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(created)
		for i := 0; i < total; i++ {
			p := pod(ns, fmt.Sprintf("burst-%02d", i), image, g.SchedulerName())
			p.Labels[framework.LabelApp] = "burst"
			if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				createErr = err
				return
			}
			created <- i
			time.Sleep(50 * time.Millisecond)
		}
	}()
	for i := range created {
		if i == killAt-1 {
			break
		}
	}
	t.Logf("killing leader %s after %d pods", leader, killAt)
	if err := g.Crash(ctx, leader); err != nil {
		t.Fatal(err)
	}
	newLeader, err := g.Leader(ctx, time.Minute)
	if err != nil {
		t.Fatalf("no replica took over: %v", err)
	}
	if newLeader == leader {
		t.Fatalf("leader is still %s after it was killed", leader)
	}
	t.Logf("new leader %s", newLeader)
	wg.Wait()
	if createErr != nil {
		t.Fatal(createErr)
	}
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, framework.LabelApp+"=burst", total, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	// A pod bound twice would have two Scheduled events.
	pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		evs, err := framework.PodEvents(ctx, env.Client, &pods.Items[i])
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range evs {
			if e.Reason == "Scheduled" {
				n += int(max(e.Count, 1))
			}
		}
		if n > 1 {
			t.Errorf("pod %s has %d Scheduled events", pods.Items[i].Name, n)
		}
	}
}

// TestSchedulerRestartColdCache: pods created while the scheduler is down
// wait, and a freshly started scheduler (empty caches) places them and
// scales an existing workload.
func TestSchedulerRestartColdCache(t *testing.T) {
	ctx, ns := setup(t)
	g := launch(ctx, t, 1, true)
	first := framework.Workload{Name: "before", Image: framework.ImageMultiArch, Replicas: 3, SchedulerName: g.SchedulerName()}
	apply(ctx, t, ns, first)
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, framework.LabelApp+"=before", 3, time.Minute); err != nil {
		t.Fatal(err)
	}

	g.Stop(ctx)
	apply(ctx, t, ns, framework.Workload{Name: "during", Image: framework.ImageAMD64Only, Replicas: 4, SchedulerName: g.SchedulerName()})
	// The ReplicaSet controller creates the pods; nobody may bind them.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, _, err := framework.Count(ctx, env.Client, ns, framework.LabelApp+"=during")
		return err == nil && c.Total == 4, nil
	})
	if err != nil {
		t.Fatalf("ReplicaSet did not create the pods: %v", err)
	}
	if c, _, err := framework.Count(ctx, env.Client, ns, framework.LabelApp+"=during"); err != nil || c.Scheduled != 0 {
		t.Fatalf("pods were scheduled while their scheduler was down: %v %v", c, err)
	}

	if err := g.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Leader(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	first.Replicas = 6
	apply(ctx, t, ns, first)
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, "", 10, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

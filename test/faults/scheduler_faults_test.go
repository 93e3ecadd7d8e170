//go:build !k8s1.35

package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

// Orders of the cases in the table.
const (
	orderKill = iota
	orderTerm
	orderRegistryDown
	orderRegistryDownIgnore
	orderAPIServer
	orderEtcd
	orderColdRestart
	orderWarmStandby
	orderColdStandby
	orderPlacementLeader
	orderPlacementLeaderCold
	orderWebhookDown
	orderHealBeforeWebhook
	orderPlacementUpgrade
)

// secondaryTemplate is the manifests' secondary scheduler configuration.
func secondaryTemplate() string {
	return filepath.Join(framework.RepoRoot(), "manifests", "scheduler-config", "secondary-scheduler.yaml")
}

// burstSize is the pods of a burst: four rounds of the distinct images.
const burstSize = 4 * distinctImages

// faultAfter is how many of the burst's pods exist when the fault is injected.
const faultAfter = distinctImages + distinctImages/2

// TestSchedulerLeaderKilled: two replicas as the chart runs them; the leader
// is killed with SIGKILL mid-burst (its lease is not released, so the standby
// waits for it to expire). Every pod is bound where it can run, and the new
// leader asks no registry about the pods that were already pending: its
// ArchFilter resolved them while it was the standby.
func TestSchedulerLeaderKilled(t *testing.T) {
	failover(t, orderKill, "leading archfilter-scheduler killed (SIGKILL)", syscall.SIGKILL)
}

// TestSchedulerLeaderTerminated: the same with SIGTERM, as a rollout or a
// drain ends the leader: it must end its work within the grace period and
// lose no held pod.
func TestSchedulerLeaderTerminated(t *testing.T) {
	failover(t, orderTerm, "leading archfilter-scheduler terminated (SIGTERM)", syscall.SIGTERM)
}

func failover(t *testing.T, order int, fault string, sig syscall.Signal) {
	ctx, ns := setup(t)
	s := newSchedulers(t, secondaryTemplate(), schedulerOptions{})
	s.start(ctx)
	s.start(ctx)
	leader := s.leader(ctx, time.Minute)
	s.ready(ctx)
	b := newBurst(ns, s.name, burstSize)
	b.gangs = 2
	b.createGangs(ctx, t)
	b.watch(ctx, t)
	b.start(ctx)
	b.waitCreated(faultAfter)
	for _, r := range s.running() {
		if r != leader {
			caughtUp(ctx, t, r, min(faultAfter, distinctImages))
		}
	}

	faultAt := time.Now()
	switch sig {
	case syscall.SIGKILL:
		leader.Kill()
	default:
		leader.Stop() // SIGTERM, then SIGKILL after 10s
	}
	exited := time.Since(faultAt)
	newLeader := s.leader(ctx, 2*time.Minute)
	before := registryRequests(t, newLeader)
	o := b.settle(ctx, t, 3*time.Minute, 0, false)
	requests := registryRequests(t, newLeader) - before
	recovery, ok := b.firstBindAfter(faultAt)
	if !ok {
		t.Errorf("no pod was bound after the fault")
	}
	note := fmt.Sprintf("%d gangs of %d among the pods (Kubernetes' gang scheduling)", b.gangs, gangSize)
	if sig == syscall.SIGTERM {
		note += fmt.Sprintf("; old leader exited %s after SIGTERM, releasing its lease", exited.Round(100*time.Millisecond))
	}
	if sig == syscall.SIGTERM && exited >= 10*time.Second {
		t.Errorf("the leader did not end within 10s of SIGTERM (%s)", exited)
	}
	report.record(order, fault, o, recovery, requests, note)
	o.check(t)
	if requests > 0 {
		t.Errorf("the new leader made %.0f registry requests for pods already pending when it took over; its standby cache should have had them", requests)
	}
}

// TestRegistryDownDuringFailover: the registries stop, then the leader is
// killed; they come back 10 seconds later. Pods whose images no replica had
// resolved meet the failure policy: under Fail they wait, Pending with an event,
// and are placed once a retry finds the registries back; none is placed blind.
// Under Ignore (the default) they are placed without an architecture
// constraint, as the policy says: the row counts those on a node that cannot
// run them, and heals them: the pods are ReplicaSets', and the companion in
// --mode=heal --misplaced=evict evicts those misplaced, which the scheduler
// places again once it can read their images.
func TestRegistryDownDuringFailover(t *testing.T) {
	for _, tc := range []struct {
		policy string
		order  int
	}{{"Fail", orderRegistryDown}, {"Ignore", orderRegistryDownIgnore}} {
		t.Run(tc.policy, func(t *testing.T) {
			registryDown(t, tc.order, tc.policy)
		})
	}
}

func registryDown(t *testing.T, order int, policy string) {
	fault := "registries down 10s while the leader is killed (SIGKILL), failurePolicy " + policy
	ctx, ns := setup(t)
	if env.Registries == nil {
		report.notRun(fault, "the provider cannot stop its registries")
		t.Skip("the provider cannot stop its registries")
	}
	s := newSchedulers(t, secondaryTemplate(), schedulerOptions{args: map[string]any{"failurePolicy": policy}})
	s.start(ctx)
	s.start(ctx)
	leader := s.leader(ctx, time.Minute)
	s.ready(ctx)
	b := newBurst(ns, s.name, burstSize)
	var healer *healCompanion
	if policy == "Ignore" {
		fault += ", the companion in --mode=heal --misplaced=evict"
		healer = startHealer(ctx, t, s.name)
		b.replicaSets, b.healing = true, true
	}
	b.watch(ctx, t)
	b.start(ctx)
	// Fewer pods than distinct images: some images are still unknown to every replica.
	b.waitCreated(distinctImages / 2)
	if err := env.Registries.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Registries.Start(context.Background()) })
	faultAt := time.Now()
	leader.Kill()
	newLeader := s.leader(ctx, 2*time.Minute)
	before := registryRequests(t, newLeader)
	time.Sleep(10*time.Second - time.Since(faultAt)) // the registries' outage, not synchronisation
	if err := env.Registries.Start(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	b.healFrom = back
	// Under Fail, a failed image is asked again when its failure expires
	// (cache.negativeTTL, 30s): wait for every pod to be bound.
	o := b.settle(ctx, t, 3*time.Minute, 0, policy == "Fail")
	requests := registryRequests(t, newLeader) - before
	recovery, _ := b.firstBindAfter(faultAt)
	_, last := b.boundSince(faultAt)
	note := fmt.Sprintf("last bind %s after the registries came back", last.Sub(back).Round(100*time.Millisecond))
	if healer != nil {
		note += "; " + evictionsNote(t, healer.metricsPort)
	}
	report.record(order, fault, o, recovery, requests, note)
	if policy == "Fail" {
		o.check(t)
		return
	}
	if o.lost+o.stuck > 0 {
		o.check(t)
	}
	o.checkHealed(t)
}

// TestAPIServerRestart: kube-apiserver is killed mid-burst and started again
// 5 seconds later; the leader may lose its lease meanwhile (renew deadline 10s)
// and exit, to be started again as a kubelet would.
func TestAPIServerRestart(t *testing.T) {
	controlPlaneRestart(t, orderAPIServer, "kube-apiserver killed (SIGKILL), started again 5s later", "kube-apiserver", syscall.SIGKILL)
}

// TestEtcdRestart: etcd is stopped mid-burst and started again 5 seconds later.
func TestEtcdRestart(t *testing.T) {
	controlPlaneRestart(t, orderEtcd, "etcd stopped (SIGTERM), started again 5s later", "etcd", syscall.SIGTERM)
}

func controlPlaneRestart(t *testing.T, order int, fault, component string, sig syscall.Signal) {
	ctx, ns := setup(t)
	cp, why := kwokControlPlane(t)
	if cp == nil {
		report.notRun(fault, why)
		t.Skip(why)
	}
	s := newSchedulers(t, secondaryTemplate(), schedulerOptions{})
	s.start(ctx)
	s.start(ctx)
	s.leader(ctx, time.Minute)
	s.ready(ctx)
	s.supervise(ctx)
	b := newBurst(ns, s.name, burstSize)
	b.watch(ctx, t)
	b.start(ctx)
	b.waitCreated(faultAfter)
	faultAt := time.Now()
	// The other components (kube-controller-manager, kwok, the cluster's
	// scheduler) may lose their leases while it is down and exit, as they would
	// be restarted by a kubelet: kwokctl starts them again after the case.
	t.Cleanup(func() {
		if err := cp.start(context.Background()); err != nil {
			t.Errorf("restarting the control plane's exited components: %v", err)
		}
	})
	if err := cp.restart(ctx, component, sig, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	back := time.Since(faultAt)
	o := b.settle(ctx, t, 3*time.Minute, 0, false)
	recovery, ok := b.firstBindAfter(faultAt.Add(back))
	if !ok {
		t.Errorf("no pod was bound after %s came back", component)
	}
	report.record(order, fault, o, back+recovery, -1,
		fmt.Sprintf("%s answering again after %s; replicas restarted by the test (as a kubelet would): %d", component, back.Round(100*time.Millisecond), s.restartCount()))
	o.check(t)
}

// leaseAcquired is when the current holder of the replicas' lease acquired it.
func (s *schedulers) leaseAcquired(ctx context.Context) (time.Time, error) {
	l, err := env.Client.CoordinationV1().Leases("kube-system").Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return time.Time{}, err
	}
	if l.Spec.AcquireTime == nil {
		return time.Time{}, fmt.Errorf("lease %s has no acquireTime", s.name)
	}
	return l.Spec.AcquireTime.Time, nil
}

// TestHotStandby: pods created while no replica leads (the leader was killed)
// wait for the lease to expire. A standby that ran beside the leader resolved
// their images while it waited, and binds them as soon as it leads; a replica
// started only after the kill (a cold standby) must first ask the registries.
// Both in one run: the time from taking the lease to the last bind, and the
// registry requests after it.
func TestHotStandby(t *testing.T) {
	ctx, _ := setup(t)
	warm := standbyFailover(ctx, t, true)
	cold := standbyFailover(ctx, t, false)
	ratio := cold.lastBind.Seconds() / max(warm.lastBind.Seconds(), 0.001)
	report.record(orderWarmStandby, "hot standby takes over: pods created while no replica led", warm.o, warm.firstBind, warm.requests,
		fmt.Sprintf("lease to last bind %s; a cold standby takes %.2fx as long", warm.lastBind.Round(10*time.Millisecond), ratio))
	report.record(orderColdStandby, "cold standby (delayCacheUntilActive: its informers start once it leads) takes over, same pods", cold.o, cold.firstBind, cold.requests,
		fmt.Sprintf("lease to last bind %s", cold.lastBind.Round(10*time.Millisecond)))
	warm.o.check(t)
	cold.o.check(t)
	if warm.requests > 0 {
		t.Errorf("the hot standby made %.0f registry requests after it took over, want 0", warm.requests)
	}
	if cold.requests < distinctImages {
		t.Errorf("the cold standby made %.0f registry requests after it took over, want at least one per distinct image (%d)", cold.requests, distinctImages)
	}
}

type standbyResult struct {
	o                   outcome
	firstBind, lastBind time.Duration // from taking the lease
	requests            float64
}

func standbyFailover(ctx context.Context, t *testing.T, warm bool) standbyResult {
	t.Helper()
	ns := dnsName(fmt.Sprintf("faults-standby-warm-%v", warm))
	newNamespace(ctx, t, ns)
	// The cold standby is kube-scheduler's own: delayCacheUntilActive starts
	// its informers only once it leads, so it has seen no pod before.
	s := newSchedulers(t, secondaryTemplate(), schedulerOptions{name: dnsName(fmt.Sprintf("af-standby-warm-%v", warm)), delayCacheUntilActive: !warm})
	leader := s.start(ctx)
	standby := s.start(ctx)
	if s.leader(ctx, time.Minute) != leader {
		// The replicas raced for the lease: the names do not matter, their roles do.
		leader, standby = standby, leader
	}
	s.ready(ctx)
	leader.Kill()
	b := newBurst(ns, s.name, burstSize)
	b.interval = 0
	b.watch(ctx, t)
	b.start(ctx)
	<-b.done
	// Pods now wait for the old lease to expire; a hot standby resolves their
	// images meanwhile, a cold one has no informer to see them.
	var before float64
	if !warm {
		before = registryRequests(t, standby)
	}
	newLeader := s.leader(ctx, 2*time.Minute)
	if newLeader != standby {
		t.Fatalf("%s leads, want the standby %s", newLeader.Name, standby.Name)
	}
	if warm {
		// It took the lease after resolving: every request it made was a standby's.
		before = registryRequests(t, newLeader)
	}
	o := b.settle(ctx, t, 3*time.Minute, 0, false)
	acquired, err := s.leaseAcquired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := standbyResult{o: o, requests: registryRequests(t, newLeader) - before}
	r.firstBind, _ = b.firstBindAfter(acquired)
	n, last := b.boundSince(acquired)
	if n != o.bound {
		t.Errorf("%d pods were bound before the new leader took the lease", o.bound-n)
	}
	r.lastBind = last.Sub(acquired)
	return r
}

// TestSchedulerRestartColdCache: every replica is stopped; pods created
// meanwhile wait unbound, and a fresh replica (empty caches) places them and
// the rest of the burst.
func TestSchedulerRestartColdCache(t *testing.T) {
	ctx, ns := setup(t)
	s := newSchedulers(t, secondaryTemplate(), schedulerOptions{})
	first := s.start(ctx)
	s.leader(ctx, time.Minute)
	s.ready(ctx)
	b := newBurst(ns, s.name, burstSize)
	b.watch(ctx, t)
	b.start(ctx)
	b.waitCreated(distinctImages / 2)
	faultAt := time.Now()
	first.Stop()
	b.waitCreated(faultAfter)
	if n, _ := b.boundSince(faultAt.Add(time.Second)); n != 0 {
		t.Errorf("%d pods were bound while no replica ran", n)
	}
	restarted := s.start(ctx)
	s.leader(ctx, 2*time.Minute)
	o := b.settle(ctx, t, 3*time.Minute, 0, false)
	recovery, _ := b.firstBindAfter(faultAt)
	report.record(orderColdRestart, "every replica stopped, one started again (cold cache)", o, recovery, registryRequests(t, restarted),
		"requests: all of the new replica's, one per distinct image at least")
	o.check(t)
}

//go:build !k8s1.35

package faults

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/archfilter/archfilter/pkg/placement"
	"github.com/archfilter/archfilter/test/e2e/framework"
)

// placementMaxGated is the companions' --max-gated.
const placementMaxGated = time.Minute

// placementLeaseDuration is the companion's Lease duration (internal/placement/app).
const placementLeaseDuration = 15 * time.Second

// placementNamespace holds the companions' certificate Secret and Lease.
const placementNamespace = "archfilter-faults-system"

// companions are replicas of the placement mode's companion as host processes,
// behind one webhook URL: a TCP proxy in the test that passes each connection
// to a running replica, as a Service does, and can refuse them all (the
// webhook unreachable).
type companions struct {
	t        *testing.T
	bin      string
	args     []string
	dir      string
	proxy    *webhookProxy
	mu       sync.Mutex
	replicas []*companion
	started  int
}

type companion struct {
	*framework.Process
	name        string
	listen      string
	metricsPort int
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// placementBinary is the companion's binary (PLACEMENT_BIN, or make build-placement's).
func placementBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PLACEMENT_BIN")
	if bin == "" {
		bin = filepath.Join(framework.RepoRoot(), "bin", "archfilter-placement")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("placement companion: %v (make build-placement, or PLACEMENT_BIN)", err)
	}
	return bin
}

// companionArgs writes the companions' ArchFilterArgs into dir, and returns its path.
func companionArgs(t *testing.T, dir string) string {
	t.Helper()
	argsFile := filepath.Join(dir, "args.yaml")
	args := fmt.Sprintf("apiVersion: kubescheduler.config.k8s.io/v1\nkind: ArchFilterArgs\nfailurePolicy: Ignore\nmaxWait: 30s\nregistries:\n- host: %s\n  insecure: true\n- host: %s\n  insecure: true\n",
		env.Public.PushHost, env.Private.PushHost)
	if err := os.WriteFile(argsFile, []byte(args), 0o600); err != nil {
		t.Fatal(err)
	}
	return argsFile
}

// newCompanions writes the companions' ArchFilterArgs and starts the proxy.
func newCompanions(ctx context.Context, t *testing.T) *companions {
	t.Helper()
	bin := placementBinary(t)
	if err := framework.EnsureNamespace(ctx, env.Client, placementNamespace); err != nil {
		t.Fatal(err)
	}
	dir := logDir(t)
	argsFile := companionArgs(t, dir)
	p := startProxy(t)
	c := &companions{t: t, bin: bin, dir: dir, proxy: p, args: []string{
		"--kubeconfig", env.Kubeconfig, "--args", argsFile,
		"--webhook-url", "https://" + p.addr, "--namespace", placementNamespace,
		"--leader-elect", "--lease-name", dnsName("placement-" + t.Name()),
		"--webhook-config-name", dnsName("placement-" + t.Name()),
		"--max-gated", placementMaxGated.String(), "-v", "2",
	}}
	t.Cleanup(func() {
		for _, r := range c.all() {
			if t.Failed() {
				t.Logf("--- %s (%s):\n%s", r.name, r.LogPath, r.Tail(20))
			}
			r.Stop()
		}
		// Leave nothing gated and no webhook behind.
		cmd := exec.Command(bin, "--kubeconfig", env.Kubeconfig, "--remove-gates", "--webhook-config-name", dnsName("placement-"+t.Name()), "--namespace", placementNamespace)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("--remove-gates: %v\n%s", err, out)
		}
	})
	return c
}

// start runs one more replica and waits until it serves the webhook.
func (c *companions) start(ctx context.Context, extra ...string) *companion {
	c.t.Helper()
	c.mu.Lock()
	name := fmt.Sprintf("placement-%d", c.started)
	c.started++
	c.mu.Unlock()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(c.t))
	metricsPort := freePort(c.t)
	args := append(append([]string{}, c.args...), "--listen", listen, "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", metricsPort), "--metrics-auth=none")
	p, err := framework.StartProcess(context.WithoutCancel(ctx), c.bin, filepath.Join(c.dir, name+".log"), append(args, extra...), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	r := &companion{Process: p, name: name, listen: listen, metricsPort: metricsPort}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("exited")
		}
		conn, err := net.DialTimeout("tcp", listen, time.Second)
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	})
	if err != nil {
		c.t.Fatalf("%s does not serve on %s: %v\n%s", name, listen, err, p.Tail(30))
	}
	c.mu.Lock()
	c.replicas = append(c.replicas, r)
	c.mu.Unlock()
	c.proxy.setBackends(c.listening())
	return r
}

func (c *companions) all() []*companion {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*companion(nil), c.replicas...)
}

func (c *companions) listening() []string {
	var out []string
	for _, r := range c.all() {
		if !r.Exited() {
			out = append(out, r.listen)
		}
	}
	return out
}

// stop ends r (SIGTERM, or SIGKILL with kill) and takes it out of the proxy.
func (c *companions) stop(r *companion, kill bool) {
	if kill {
		r.Kill()
	} else {
		r.Stop()
	}
	c.proxy.setBackends(c.listening())
}

// leader waits until one running replica has acquired the Lease.
func (c *companions) leader(ctx context.Context) *companion {
	c.t.Helper()
	var l *companion
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		for _, r := range c.all() {
			if !r.Exited() && r.LogContains("Successfully acquired lease") {
				l = r
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Fatalf("no placement replica leads: %v", err)
	}
	return l
}

// requests is a replica's archfilter_resolver_registry_requests_total.
func (r *companion) requests(t *testing.T) float64 {
	t.Helper()
	v, _, err := metric(-r.metricsPort, "archfilter_resolver_registry_requests_total")
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	return v
}

// webhookProxy passes TCP connections (TLS passes through) to one of its
// backends in turn, or refuses them while down.
type webhookProxy struct {
	addr     string
	ln       net.Listener
	mu       sync.Mutex
	backends []string
	next     int
	conns    map[net.Conn]bool
	down     atomic.Bool
}

// setDown refuses new connections and, going down, cuts the open ones (the
// apiserver keeps its connection to a webhook open).
func (p *webhookProxy) setDown(down bool) {
	p.down.Store(down)
	if !down {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func startProxy(t *testing.T) *webhookProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &webhookProxy{addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(conn)
		}
	}()
	return p
}

func (p *webhookProxy) setBackends(b []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = b
}

func (p *webhookProxy) serve(conn net.Conn) {
	defer conn.Close()
	if p.down.Load() {
		return
	}
	p.mu.Lock()
	p.conns[conn] = true
	defer func() {
		p.mu.Lock()
		delete(p.conns, conn)
		p.mu.Unlock()
	}()
	backends := append([]string(nil), p.backends...)
	start := p.next
	p.next++
	p.mu.Unlock()
	for i := range backends {
		up, err := net.DialTimeout("tcp", backends[(start+i)%len(backends)], time.Second)
		if err != nil {
			continue
		}
		defer up.Close()
		go func() { _, _ = io.Copy(up, conn) }()
		_, _ = io.Copy(conn, up)
		return
	}
}

// placementBurst is a burst for the stock scheduler s, whose pods the
// placement mode gates.
func placementBurst(ns string, s *schedulers) *burst {
	return newBurst(ns, s.name, burstSize)
}

// stockTemplate is a kube-scheduler configuration without ArchFilter.
func stockTemplate() string {
	return filepath.Join(framework.RepoRoot(), "test", "faults", "testdata", "stock-scheduler.yaml")
}

// placementCluster starts the stock scheduler (two replicas) and two
// companions, with extra flags.
func placementCluster(ctx context.Context, t *testing.T, extra ...string) (*schedulers, *companions) {
	t.Helper()
	s := newSchedulers(t, stockTemplate(), schedulerOptions{})
	s.start(ctx)
	s.start(ctx)
	s.leader(ctx, time.Minute)
	c := newCompanions(ctx, t)
	c.start(ctx, extra...)
	c.start(ctx, extra...)
	c.leader(ctx)
	// The webhook gates only while it sees a controller run (its Lease renewed).
	probe := &v1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: placementNamespace + "-probe"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "registry.invalid/probe"}}}}
	if err := framework.EnsureNamespace(ctx, env.Client, probe.Namespace); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		created, err := env.Client.CoreV1().Pods(probe.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && placement.HasGate(created), nil
	})
	if err != nil {
		t.Fatalf("the webhook does not gate pods: %v", err)
	}
	return s, c
}

// ungated counts the burst's pods the webhook did not gate: the placement
// mode took no decision for them.
func ungated(ctx context.Context, t *testing.T, ns string) (n int) {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: framework.LabelApp + "=burst"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if _, recorded := list.Items[i].Annotations["archfilter.io/decision"]; !recorded {
			n++
		}
	}
	return n
}

// TestPlacementLeaderKilled: the controller's leader is killed (SIGKILL) with
// pods gated; the other replica takes the Lease and releases them, within
// --max-gated, each with the affinity its images need. Twice in one run: with
// the hot standby (the default), which resolved the gated pods' images while
// it waited and asks the registries nothing after it leads, and with a cold
// standby (--hot-standby=false), which asks for every image after it leads.
func TestPlacementLeaderKilled(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order int
		fault string
		flags []string
	}{
		{"hot", orderPlacementLeader, "placement controller's leader killed (SIGKILL) with pods gated: hot standby (the default)", nil},
		{"cold", orderPlacementLeaderCold, "the same with a cold standby (--hot-standby=false: a standby only serves the webhook)", []string{"--hot-standby=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := placementLeaderKilled(t, tc.flags...)
			report.record(tc.order, tc.fault, r.o, r.recovery, r.requests,
				fmt.Sprintf("%d pods admitted ungated while no controller ran; the standby took the Lease %s after the kill, last bind %s after that",
					r.ungated, r.takeover.Round(100*time.Millisecond), r.lastBind.Round(10*time.Millisecond)))
			r.o.check(t)
			if tc.name == "hot" && r.requests > 0 {
				t.Errorf("the hot standby made %.0f registry requests after it took the Lease, want 0: it resolved the gated pods' images while it waited", r.requests)
			}
			if tc.name == "cold" && r.requests < distinctImages {
				t.Errorf("the cold standby made %.0f registry requests after it took the Lease, want at least one per distinct image (%d)", r.requests, distinctImages)
			}
		})
	}
}

type placementFailover struct {
	o                  outcome
	recovery           time.Duration // from the kill to the first bind after it
	takeover, lastBind time.Duration // kill to Lease taken; Lease taken to the last bind
	requests           float64       // the new leader's registry requests after it took the Lease
	ungated            int
}

func placementLeaderKilled(t *testing.T, flags ...string) placementFailover {
	ctx, ns := setup(t)
	s, c := placementCluster(ctx, t, flags...)
	leader := c.leader(ctx)
	b := placementBurst(ns, s)
	b.watch(ctx, t)
	b.start(ctx)
	b.waitCreated(faultAfter)
	faultAt := time.Now()
	c.stop(leader, true)
	newLeader := c.leader(ctx)
	before := newLeader.requests(t)
	took := time.Since(faultAt)
	o := b.settle(ctx, t, 3*time.Minute, placementMaxGated, false)
	r := placementFailover{o: o, requests: newLeader.requests(t) - before, ungated: ungated(ctx, t, ns), takeover: took}
	r.recovery, _ = b.firstBindAfter(faultAt)
	_, last := b.boundSince(faultAt.Add(took))
	r.lastBind = max(0, last.Sub(faultAt.Add(took)))
	return r
}

// TestWebhookUnreachable: the webhook refuses connections for 10 seconds
// (failurePolicy Ignore): pods created meanwhile are admitted ungated and
// scheduled as if the mode were off; the others are placed as always. The
// companions heal (--misplaced=evict): the pods are ReplicaSets' and those
// placed blind are evicted once the webhook serves again, and come back gated.
func TestWebhookUnreachable(t *testing.T) {
	ctx, ns := setup(t)
	s, c := placementCluster(ctx, t, healFlags...)
	b := placementBurst(ns, s)
	b.replicaSets, b.healing = true, true
	b.watch(ctx, t)
	b.start(ctx)
	b.waitCreated(faultAfter)
	faultAt := time.Now()
	c.proxy.setDown(true)
	time.Sleep(10 * time.Second) // the outage, not synchronisation
	c.proxy.setDown(false)
	b.healFrom = time.Now()
	o := b.settle(ctx, t, 3*time.Minute, placementMaxGated, false)
	recovery, _ := b.firstBindAfter(faultAt)
	n := b.ungatedOriginals()
	report.record(orderWebhookDown, "placement webhook unreachable for 10s (failurePolicy Ignore), companions in --misplaced=evict", o, recovery, -1,
		fmt.Sprintf("%d pods admitted ungated during the outage, scheduled as if the mode were off; %s", n, evictionsNote(t, c.leader(ctx).metricsPort)))
	if o.lost+o.stuck > 0 {
		o.check(t)
	}
	o.checkHealed(t)
	// Only pods the webhook never saw may be on a node that cannot run them.
	if o.misplaced > n {
		t.Errorf("%d pods misplaced, more than the %d admitted ungated:\n%v", o.misplaced, n, o.details)
	}
}

// TestPlacementUpgrade: the companion is upgraded mid-burst as a Deployment's
// rollout does it: a new replica starts, then the old ones end (SIGTERM) one at
// a time. No pod is lost, misplaced or gated past --max-gated.
func TestPlacementUpgrade(t *testing.T) {
	ctx, ns := setup(t)
	s, c := placementCluster(ctx, t)
	old := c.all()
	b := placementBurst(ns, s)
	b.watch(ctx, t)
	b.start(ctx)
	b.waitCreated(faultAfter)
	oldLeader := c.leader(ctx)
	faultAt := time.Now()
	var handover time.Duration
	for _, r := range old {
		// The new version: other settings, as an upgrade brings.
		c.start(ctx, "--workers", "8")
		stopped := time.Now()
		c.stop(r, false)
		if r == oldLeader {
			c.leader(ctx)
			handover = time.Since(stopped)
		}
	}
	c.leader(ctx)
	o := b.settle(ctx, t, 3*time.Minute, placementMaxGated, false)
	recovery, _ := b.firstBindAfter(faultAt)
	n := ungated(ctx, t, ns)
	report.record(orderPlacementUpgrade, "placement companion upgraded mid-burst (rolling: start one, stop one)", o, recovery, -1,
		fmt.Sprintf("%d pods admitted ungated; the Lease changed hands %s after the old leader's SIGTERM", n, handover.Round(100*time.Millisecond)))
	o.check(t)
	// The old leader releases its Lease when SIGTERM ends it: the next leads
	// at once. A Lease left to expire (a process that dies at SIGTERM) leaves
	// no controller for its whole duration, and the webhook admits new pods
	// ungated meanwhile.
	if handover >= placementLeaseDuration {
		t.Errorf("the Lease changed hands %s after the old leader's SIGTERM, want it released (under the Lease's %s)", handover, placementLeaseDuration)
	}
}

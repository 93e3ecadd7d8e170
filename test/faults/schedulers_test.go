//go:build !k8s1.35

package faults

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

// The lease as the chart and the manifests configure it: kube-scheduler's
// defaults (15s lease, 10s renew deadline, 2s retry period).
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// schedulers are the replicas of one archfilter-scheduler, sharing a lease,
// started and stopped one by one.
type schedulers struct {
	t       *testing.T
	name    string
	config  string
	dir     string
	started int

	mu       sync.Mutex
	replicas []*framework.Scheduler
	// replaced are the exited replicas supervise started another for.
	replaced map[*framework.Scheduler]bool
	// restarts counts the replicas supervise started again.
	restarts int
}

// schedulerOptions vary the replicas' configuration.
type schedulerOptions struct {
	// args are merged into ArchFilter's.
	args map[string]any
	// name is the scheduler's and lease's name; default: the test's.
	name string
	// delayCacheUntilActive is kube-scheduler's option of that name: informers
	// start only once the replica leads, so a standby knows nothing (a cold standby).
	delayCacheUntilActive bool
}

// replicaArgs let the test read /metrics on the replica's secure port without
// credentials (loopback only), and turn on Kubernetes' gang scheduling
// (GenericWorkload, beta and off by default in 1.37; the suite's API server
// serves its API).
var replicaArgs = []string{"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
	"--feature-gates=GenericWorkload=true"}

// newSchedulers writes the secondary scheduler's config (manifests/), with
// o's args merged into ArchFilter's, the leader election of the chart, and a
// name of its own.
func newSchedulers(t *testing.T, template string, o schedulerOptions) *schedulers {
	t.Helper()
	cfg, err := framework.LoadSchedulerConfig(template)
	if err != nil {
		t.Fatal(err)
	}
	name := o.name
	if name == "" {
		name = dnsName("af-" + t.Name())
	}
	dir := logDir(t)
	cfg.SetKubeconfig(env.Kubeconfig).AddInsecureRegistries(env.Public.PushHost, env.Private.PushHost).SetArchFilterArgs(o.args).
		SetSchedulerName(name).SetLeaderElection(true, "kube-system", name, leaseDuration, renewDeadline, retryPeriod).
		SetDelayCacheUntilActive(o.delayCacheUntilActive)
	path := filepath.Join(dir, name+".yaml")
	if err := cfg.Write(path); err != nil {
		t.Fatal(err)
	}
	s := &schedulers{t: t, name: name, config: path, dir: dir, replaced: map[*framework.Scheduler]bool{}}
	t.Cleanup(func() {
		for _, r := range s.all() {
			if t.Failed() {
				t.Logf("--- %s (%s):\n%s", r.Name, r.LogPath, r.Tail(20))
			}
			r.Stop()
		}
	})
	return s
}

// start runs one more replica.
func (s *schedulers) start(ctx context.Context) *framework.Scheduler {
	s.t.Helper()
	r, err := s.startReplica(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

func (s *schedulers) startReplica(ctx context.Context) (*framework.Scheduler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("%s-%d", s.name, s.started)
	s.started++
	r, err := framework.StartScheduler(context.WithoutCancel(ctx), schedulerBinary(), s.config, s.dir, id, replicaArgs...)
	if err != nil {
		return nil, err
	}
	s.replicas = append(s.replicas, r)
	return r, nil
}

func (s *schedulers) all() []*framework.Scheduler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*framework.Scheduler(nil), s.replicas...)
}

// supervise starts a replica again whenever one exits, as the kubelet does
// for a Deployment's pod (a replica that loses its lease exits), until ctx ends.
func (s *schedulers) supervise(ctx context.Context) {
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			for _, r := range s.all() {
				s.mu.Lock()
				replace := r.Exited() && !s.replaced[r]
				if replace {
					s.replaced[r] = true
					s.restarts++
				}
				s.mu.Unlock()
				if replace {
					_, _ = s.startReplica(ctx)
				}
			}
		}
	}()
}

// running are the replicas that have not exited.
func (s *schedulers) running() []*framework.Scheduler {
	var out []*framework.Scheduler
	for _, r := range s.all() {
		if !r.Exited() {
			out = append(out, r)
		}
	}
	return out
}

// leader waits for one running replica to lead.
func (s *schedulers) leader(ctx context.Context, timeout time.Duration) *framework.Scheduler {
	s.t.Helper()
	l, err := framework.WaitLeader(ctx, timeout, s.running()...)
	if err != nil {
		s.t.Fatal(err)
	}
	return l
}

// ready waits until every running replica serves /metrics, so that a standby
// has its informers and plugins running.
func (s *schedulers) ready(ctx context.Context) {
	s.t.Helper()
	for _, r := range s.running() {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			_, _, err := metric(r.Port, "archfilter_resolver_registry_requests_total")
			return err == nil, nil
		})
		if err != nil {
			s.t.Fatalf("%s does not serve /metrics: %v\n%s", r.Name, err, r.Tail(20))
		}
	}
}

// caughtUp waits until replica r has an answer cached for each of images
// distinct images and none in flight: it has seen, and resolved, every pod
// created so far. A standby is checked so before its leader is stopped: on a
// loaded machine its watch may lag behind the pods just created, and what it
// resolves after the takeover would be counted as the new leader's.
func caughtUp(ctx context.Context, t *testing.T, r *framework.Scheduler, images int) {
	t.Helper()
	var cached, inFlight float64
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var err error
		if cached, _, err = metric(r.Port, "archfilter_resolver_cache_entries"); err != nil {
			return false, nil
		}
		if inFlight, _, err = metric(r.Port, "archfilter_resolver_pending_resolutions"); err != nil {
			return false, nil
		}
		return cached >= float64(images) && inFlight == 0, nil
	})
	if err != nil {
		t.Fatalf("%s has %.0f of %d images cached and %.0f resolutions in flight after 30s: %v\n%s", r.Name, cached, images, inFlight, err, r.Tail(20))
	}
}

// schedulerBinary is the scheduler the suite tests (make sets ARCHFILTER_SCHEDULER_BINARY).
func schedulerBinary() string {
	if b := os.Getenv("ARCHFILTER_SCHEDULER_BINARY"); b != "" {
		return b
	}
	return filepath.Join(framework.RepoRoot(), "bin", "archfilter-scheduler")
}

var insecureClient = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // the replica's self-signed serving certificate on loopback
}

// metric sums the samples of a counter or gauge on a replica's /metrics
// (https on port, or http when port is negative: the placement companion);
// found is false when the metric has no sample (a counter never incremented).
func metric(port int, name string) (sum float64, found bool, err error) {
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	if port < 0 {
		url = fmt.Sprintf("http://127.0.0.1:%d/metrics", -port)
	}
	resp, err := insecureClient.Get(url)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("%s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest != "" && rest[0] != ' ' && rest[0] != '{' {
			continue // another metric whose name starts the same
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s: %q: %w", url, line, err)
		}
		sum += v
		found = true
	}
	return sum, found, sc.Err()
}

// registryRequests is a replica's archfilter_resolver_registry_requests_total.
func registryRequests(t *testing.T, r *framework.Scheduler) float64 {
	t.Helper()
	v, _, err := metric(r.Port, "archfilter_resolver_registry_requests_total")
	if err != nil {
		t.Fatalf("%s: %v", r.Name, err)
	}
	return v
}

// restartCount is how many replicas supervise started again.
func (s *schedulers) restartCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

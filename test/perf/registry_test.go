//go:build !k8s1.35

package perf

import (
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// Registry latency and outage faults of the workloads.
const (
	registryLatency = 20 * time.Millisecond
	slowLatency     = 2 * time.Second
	// coldImages and outageImages are the distinct images of pod-cold.yaml and
	// pod-outage.yaml ({{Mod .Index 1000}}); cachedImages those of pod-cached.yaml.
	coldImages   = 1000
	outageImages = 1000
	cachedImages = 100
)

// registries are the workloads' image sources: warm (images resolved by warm-up pods),
// cold (never seen before the measured pods) and outage (healthy, down or slow,
// per workload).
type registries struct {
	warm, cold, outage *registry
}

func (r *registries) all() []*registry { return []*registry{r.warm, r.cold, r.outage} }

// registry is an in-memory registry behind a TLS reverse proxy of the harness's own.
//
// TLS, with the test CA in ArchFilter's registries[].caFile, because production
// registries speak HTTPS: against plain HTTP, go-containerregistry's ping tries HTTPS
// first, and a burst of cold resolutions counts those refusals towards the circuit
// breaker, which opens and fails every pod open (see docs/benchmarks.md).
//
// The proxy's own, because scheduler_perf checks for leaked goroutines after each
// workload, and a connection open to the registry counts on both ends. The resolver
// closes its idle connections when it stops, but the harness's cleanup runs before
// scheduler_perf stops the scheduler, and a registry outlives the workloads: so the
// harness also closes every connection (disconnect) once a workload is done, and the
// proxy closes connections idle for a second.
type registry struct {
	*registrytest.Memory
	front    *httptest.Server
	upstream *http.Transport
	// closed turns every connection away once a workload is over: its scheduler
	// still runs for a moment after the harness's cleanup and may dial again.
	closed atomic.Bool
}

// Host is the address pods' image references use: the proxy's.
func (r *registry) Host() string { return r.front.Listener.Addr().String() }

// disconnect closes every connection the scheduler has open to the registry, and
// makes the registry answer 503 and close the connection until reopen: no connection
// outlives the workload, even one its scheduler opens while it shuts down.
func (r *registry) disconnect() {
	r.closed.Store(true)
	r.front.Config.SetKeepAlivesEnabled(false)
	r.front.CloseClientConnections()
	r.upstream.CloseIdleConnections()
}

// reopen serves requests again, for the next workload.
func (r *registry) reopen() {
	r.front.Config.SetKeepAlivesEnabled(true)
	r.closed.Store(false)
}

// setLatency makes every request wait d before it is answered (0: none).
func (r *registry) setLatency(d time.Duration) {
	r.ClearFaults()
	if d > 0 {
		r.AddFault(registrytest.Fault{Delay: d})
	}
}

func newRegistry(b *testing.B) *registry {
	mem := registrytest.NewMemory(b)
	target, err := url.Parse("http://" + mem.Host())
	if err != nil {
		b.Fatal(err)
	}
	// No keep-alive behind the proxy, and a short idle timeout in front of it: a
	// connection the resolver dialed but never used (net/http pools it when another
	// one came free first) would otherwise outlive the workload.
	upstream := &http.Transport{DisableKeepAlives: true}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = upstream
	// The scheduler cancels requests when a workload ends; that is no news.
	quiet := log.New(io.Discard, "", 0)
	proxy.ErrorLog = quiet
	r := &registry{Memory: mem, upstream: upstream}
	r.front = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.closed.Load() {
			w.Header().Set("Connection", "close")
			http.Error(w, "the workload is over", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	r.front.Config.ErrorLog = quiet
	r.front.Config.ReadHeaderTimeout = time.Second
	r.front.Config.IdleTimeout = time.Second
	r.front.StartTLS()
	b.Cleanup(func() {
		r.front.Close()
		upstream.CloseIdleConnections()
	})
	return r
}

// writeCA writes the proxies' CA certificate (httptest's, shared by every TLS test
// server) to dir and returns the file's path, for ArchFilter's registries[].caFile.
func (r *registries) writeCA(b *testing.B, dir string) string {
	b.Helper()
	path := filepath.Join(dir, "registry-ca.pem")
	block := &pem.Block{Type: "CERTIFICATE", Bytes: r.warm.front.Certificate().Raw}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// startRegistries starts the three registries and pushes every image the workloads
// use: multi-arch indexes (linux/amd64, linux/arm64, one repository each, as distinct
// images are in practice), an s390x-only index, and an index of every node
// architecture (linux/amd64, arm64, s390x).
func startRegistries(b *testing.B) *registries {
	b.Helper()
	start := time.Now()
	regs := &registries{warm: newRegistry(b), cold: newRegistry(b), outage: newRegistry(b)}

	type push struct {
		reg   *registry
		ref   string
		specs []string
	}
	var pushes []push
	pushes = append(pushes,
		push{regs.warm, "perf/multiarch:v1", []string{"linux/amd64", "linux/arm64"}},
		push{regs.warm, "perf/s390x:v1", []string{"linux/s390x"}},
		push{regs.warm, "perf/everywhere:v1", []string{"linux/amd64", "linux/arm64", "linux/s390x"}},
		// The pause images of upstream's templates, which the Upstream_* cases'
		// ArchFilter profile resolves through this registry as a mirror of registry.k8s.io.
		push{regs.warm, "pause:3.10.1", []string{"linux/amd64", "linux/arm64", "linux/ppc64le", "linux/s390x"}},
		push{regs.warm, "pause:3.10.2", []string{"linux/amd64", "linux/arm64", "linux/ppc64le", "linux/s390x"}})
	for i := range cachedImages {
		pushes = append(pushes, push{regs.warm, fmt.Sprintf("perf/cached-%d:v1", i), []string{"linux/amd64", "linux/arm64"}})
	}
	for i := range coldImages {
		pushes = append(pushes, push{regs.cold, fmt.Sprintf("perf/cold-%d:v1", i), []string{"linux/amd64", "linux/arm64"}})
	}
	for i := range outageImages {
		pushes = append(pushes, push{regs.outage, fmt.Sprintf("perf/outage-%d:v1", i), []string{"linux/amd64", "linux/arm64"}})
	}

	// Buffered and closed up front: a worker that fails the benchmark exits
	// (FailNow), and nobody must block sending to it.
	work := make(chan push, len(pushes))
	for _, p := range pushes {
		work <- p
	}
	close(work)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				p.reg.Fixtures(b).Index(p.ref, registrytest.OCI, p.specs...)
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	for _, r := range regs.all() {
		r.Requests.Reset()
		r.setLatency(registryLatency)
	}
	b.Logf("pushed %d images to 3 registries in %s", len(pushes), time.Since(start).Round(time.Millisecond))
	return regs
}

package cycle

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics/legacyregistry"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// memoryImages are BenchmarkSchedulerMemory's counts of distinct images cached,
// in the order they are reached: the scheduler alone, then 10 000 and 100 000 (the
// default cache.maxEntries) distinct images.
var memoryImages = []int{0, 10000, 100000}

// BenchmarkSchedulerMemory measures the memory of a scheduler process with
// ArchFilter over benchNodes nodes as its resolver's cache fills with distinct
// images: the resident set (VmRSS, after a GC that returns freed memory to the
// system) and the live heap, with 0, 10 000 and 100 000 images resolved
// (sub-benchmarks images=<n>, each adding to the cache of the one before). Images
// are resolved through ArchFilter's own path (PreEnqueue of a pod, the resolver's
// workers, HTTP to a registry) from a registry that computes each repository's
// index on request and stores nothing, so the process holds no copy of them. The
// process also holds the fake API server's copy of the nodes, which a scheduler
// does not: read the growth from images=0, not the absolute figure, as what the
// images cost. Run it with -benchtime 1x (make bench does, with BENCH_CURVE).
func BenchmarkSchedulerMemory(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	reg := httptest.NewServer(syntheticRegistry{})
	b.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	c := newClusterOf(b, ctx, layout{nodes: benchNodes, makeNode: makeNode, registries: []string{host}})
	pre := c.archFilterPreEnqueue(b)
	resolved := 0
	for _, n := range memoryImages {
		b.Run(fmt.Sprintf("images=%d", n), func(b *testing.B) {
			// Go may run a sub-benchmark more than once: the cache is filled once.
			for ; resolved < n; resolved++ {
				pod := c.makePod(fmt.Sprintf("memory-%d", resolved), profileArchFilter, image{}, nil)
				pod.Spec.Containers[0].Image = fmt.Sprintf("%s/synthetic/app-%d:v1", host, resolved)
				// A gated pod's images are resolved and nothing is held (PreEnqueue).
				pod.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/memory"}}
				if s := pre.PreEnqueue(ctx, pod); !s.IsSuccess() {
					b.Fatalf("PreEnqueue of a gated pod: %v", s)
				}
			}
			entries := waitForResolutions(b, ctx, n)
			for range b.N {
				// Nothing to time: the figures are memory.
			}
			rss, heap := processMemory(b)
			b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
			b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
			b.ReportMetric(entries, "cache-entries")
		})
	}
}

// archFilterPreEnqueue is ArchFilter's PreEnqueue plugin in the archfilter profile.
func (c *cluster) archFilterPreEnqueue(tb testing.TB) fwk.PreEnqueuePlugin {
	tb.Helper()
	for _, p := range c.sched.Profiles[profileArchFilter].PreEnqueuePlugins() {
		if p.Name() == archfilter.Name {
			return p
		}
	}
	tb.Fatalf("profile %s has no ArchFilter PreEnqueue", profileArchFilter)
	return nil
}

// waitForResolutions waits until the resolver has no resolution pending and its
// cache holds at least the n images (more: the cluster's own), and returns the
// cache's entries.
func waitForResolutions(tb testing.TB, ctx context.Context, n int) float64 {
	tb.Helper()
	var pending, entries float64
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
		var err error
		pending, entries, err = resolverGauges()
		return err == nil && pending == 0 && entries >= float64(n), err
	})
	if err != nil {
		tb.Fatalf("the resolver has %v resolutions pending and %v cache entries, want none pending and %d entries: %v", pending, entries, n, err)
	}
	return entries
}

// resolverGauges reads archfilter_resolver_pending_resolutions and _cache_entries.
func resolverGauges() (pending, entries float64, err error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return 0, 0, err
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "archfilter_resolver_pending_resolutions":
				pending += m.GetGauge().GetValue()
			case "archfilter_resolver_cache_entries":
				entries += m.GetGauge().GetValue()
			}
		}
	}
	return pending, entries, nil
}

// processMemory is the process's resident set (VmRSS) and live heap after a
// collection that returns freed memory to the system.
func processMemory(tb testing.TB) (rss, heap uint64) {
	tb.Helper()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				tb.Fatalf("VmRSS: %v", err)
			}
			return kb << 10, ms.HeapAlloc
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0, 0
}

// syntheticRegistry is a registry that stores nothing: it answers the manifest of
// any repository's tag with an OCI index of linux/amd64 and linux/arm64 computed
// from the repository's name (so that each has a digest of its own), and the /v2/
// ping; everything else is 404.
type syntheticRegistry struct{}

func (syntheticRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v2/" {
		w.WriteHeader(http.StatusOK)
		return
	}
	repo, _, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v2/"), "/manifests/")
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.NotFound(w, r)
		return
	}
	body := syntheticIndex(repo)
	w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
	w.Header().Set("Docker-Content-Digest", fmt.Sprintf("sha256:%x", sha256.Sum256(body)))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// syntheticIndex is repo's index: one manifest per platform, whose digests are
// derived from the repository's name and the platform.
func syntheticIndex(repo string) []byte {
	type platform struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	}
	type descriptor struct {
		MediaType string   `json:"mediaType"`
		Digest    string   `json:"digest"`
		Size      int      `json:"size"`
		Platform  platform `json:"platform"`
	}
	var manifests []descriptor
	for _, arch := range []string{"amd64", "arm64"} {
		manifests = append(manifests, descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json",
			Digest: fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(repo+"/"+arch))), Size: 512,
			Platform: platform{Architecture: arch, OS: "linux"}})
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests,
	})
	return buf.Bytes()
}

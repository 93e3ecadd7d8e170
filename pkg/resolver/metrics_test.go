package resolver

import (
	"testing"

	"k8s.io/component-base/metrics/testutil"

	"github.com/archfilter/archfilter/internal/registrytest"
)

func TestMetrics(t *testing.T) {
	RegisterMetrics() // again: must not panic

	m := registrytest.NewMemory(t)
	img := m.Fixtures(t).Index("metrics:v1", registrytest.OCI, "linux/amd64")
	r := newTestResolver(t, Options{})

	gets := func() float64 {
		v, err := testutil.GetCounterMetricValue(registryRequests.WithLabelValues("GET", "2xx"))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	notFound := func() float64 {
		v, err := testutil.GetCounterMetricValue(failures.WithLabelValues(string(ReasonNotFound)))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	hits := func() float64 {
		v, err := testutil.GetCounterMetricValue(cacheHits)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	entries := func() float64 {
		v, err := testutil.GetGaugeMetricValue(cacheEntries)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	gets0, notFound0, hits0, entries0 := gets(), notFound(), hits(), entries()

	if res := r.Resolve(testContext(t), Request{Image: img.Ref}); res.Err != nil {
		t.Fatal(res.Err)
	}
	r.Resolve(testContext(t), Request{Image: m.Host() + "/metrics:missing"})
	r.Lookup(Request{Image: img.Ref})

	// The ping and the manifest GET; the 404 is a 4xx.
	if got := gets() - gets0; got != 2 {
		t.Errorf("GET 2xx requests: %v, want 2", got)
	}
	if got := notFound() - notFound0; got != 1 {
		t.Errorf("NotFound failures: %v, want 1", got)
	}
	if got := hits() - hits0; got != 1 {
		t.Errorf("cache hits: %v, want 1", got)
	}
	if got := entries() - entries0; got != float64(r.cache.len()) {
		t.Errorf("cache size gauge grew by %v, want %d", got, r.cache.len())
	}

	// A second Resolver, as a second profile enabling ArchFilter builds: the
	// gauge is the total of both caches, not the last one to change.
	r2 := newTestResolver(t, Options{})
	if res := r2.Resolve(testContext(t), Request{Image: img.Ref}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got, want := entries()-entries0, float64(r.cache.len()+r2.cache.len()); got != want {
		t.Errorf("cache size gauge with two resolvers grew by %v, want %v", got, want)
	}
}

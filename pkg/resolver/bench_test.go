package resolver

import (
	"testing"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// BenchmarkLookupWarm measures the scheduler's hot path: an anonymously resolved index,
// found in the cache.
func BenchmarkLookupWarm(b *testing.B) {
	m := registrytest.NewMemory(b)
	img := m.Fixtures(b).Index("app:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	r := newTestResolver(b, Options{})
	req := Request{Image: img.Ref}
	if res := r.Resolve(testContext(b), req); res.Err != nil {
		b.Fatal(res.Err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, found := r.Lookup(req); !found {
			b.Fatal("not found")
		}
	}
}

// BenchmarkLookupWarmWithCredentials measures a private image's hot path: the anonymous
// scope misses, then the pod's credential's scope hits.
func BenchmarkLookupWarmWithCredentials(b *testing.B) {
	m := registrytest.NewMemory(b, registrytest.WithBasicAuth("user", "pass"))
	img := m.Fixtures(b).Index("app:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	r := newTestResolver(b, Options{})
	c := credsFor(m.Host(), cred("other", "user", "wrong"), cred("owner", "user", "pass"))
	req := Request{Image: img.Ref, Credentials: c}
	if res := r.Resolve(testContext(b), req); res.Err != nil {
		b.Fatal(res.Err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, found := r.Lookup(req); !found {
			b.Fatal("not found")
		}
	}
}

// TestLookupWarmDoesNotAllocate holds Lookup to its contract: a cached answer
// costs the resolver no allocation, with credentials, with or without mirrors
// (it runs in every scheduling cycle, through PreEnqueue and PreFilter). The
// endpoint list is the caller's: here one that does not allocate.
func TestLookupWarmDoesNotAllocate(t *testing.T) {
	m := registrytest.NewMemory(t, registrytest.WithBasicAuth("user", "pass"))
	img := m.Fixtures(t).Index("app:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	c := credsFor(m.Host(), cred("other", "user", "wrong"), cred("owner", "user", "pass"))
	mirrored := []Endpoint{{Host: "127.0.0.1:1"}, {Host: m.Host()}} // nothing listens on the mirror
	tests := []struct {
		name string
		opts Options
	}{
		{name: "registry only"},
		{name: "behind a mirror list", opts: Options{Endpoints: func(string) []Endpoint { return mirrored }}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestResolver(t, tc.opts)
			req := Request{Image: img.Ref, Credentials: c}
			if res := r.Resolve(testContext(t), req); res.Err != nil {
				t.Fatal(res.Err)
			}
			allocs := testing.AllocsPerRun(100, func() {
				if _, found := r.Lookup(req); !found {
					t.Fatal("not found")
				}
			})
			if allocs != 0 {
				t.Errorf("Lookup of a cached answer allocated %.1f times, want 0", allocs)
			}
		})
	}
}

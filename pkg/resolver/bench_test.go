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

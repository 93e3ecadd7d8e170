//go:build linux

package resolver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/resolver"
	"github.com/archfilter/archfilter/pkg/resolver/transport"
)

// TestRequestCountsDistribution counts what the resolver asks a real Distribution, through
// the production transport: index = 1 GET after one handshake per repository, single-arch
// = 2, cached = 0, revalidation = 1 HEAD, 1 000 concurrent lookups = 1 fetch.
//
// StartDistribution disables Distribution's access log, so the requests are counted by a
// transparent proxy in front of it. The in-memory registry's counts are pinned by
// pkg/resolver/requests_test.go (TestRequestCounts, for no auth, Basic and Bearer) and are
// not repeated here.
func TestRequestCountsDistribution(t *testing.T) {
	reg := startDistribution(t)
	f := reg.fixtures(t)
	fr := reg.faulty
	host := fr.Host()
	index := f.Index("app:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	sameRepo := f.Index("app:v2", registrytest.OCI, "linux/amd64")
	single := f.Image("single:v1", registrytest.Docker, "linux/arm64")
	popular := f.Index("popular:v1", registrytest.OCI, "linux/amd64", "linux/s390x")
	singleConfig := configDigest(t, f, reg, single)
	fr.Reset()

	clk := testingclock.NewFakeClock(time.Now())
	r := newResolver(t, transport.Options{}, resolver.Options{
		Clock: clk,
		// Expired answers are misses here: each step counts what one resolution sends.
		Cache: resolver.CacheOptions{TagTTL: time.Minute, DigestTTL: time.Hour, StaleWhileRevalidate: -1},
	})
	creds := podSecretCredentials(t, host)
	resolve := func(t *testing.T, p registrytest.Pushed, digestRef bool) resolver.Result {
		t.Helper()
		_, ctx := ktesting.NewTestContext(t)
		image := reg.on(host, p.Ref)
		if digestRef {
			image = reg.on(host, p.DigestRef())
		}
		res := r.Resolve(ctx, resolver.Request{Image: image, Credentials: creds})
		if res.Err != nil {
			t.Fatalf("Resolve(%s): %v", image, res.Err)
		}
		return res
	}

	t.Run("index: one manifest GET after the handshake", func(t *testing.T) {
		resolve(t, index, false)
		expectCounts(t, fr, reg.handshake, map[string]int{"GET /v2/app/manifests/v1 200": 1})
	})
	t.Run("same repository: no new handshake", func(t *testing.T) {
		resolve(t, sameRepo, false)
		expectCounts(t, fr, map[string]int{"GET /v2/app/manifests/v2 200": 1})
	})
	t.Run("single-arch image: manifest and config", func(t *testing.T) {
		resolve(t, single, false)
		expectCounts(t, fr, reg.handshake, map[string]int{
			"GET /v2/single/manifests/v1 200":               1,
			"GET /v2/single/blobs/" + singleConfig + " 200": 1,
		})
	})
	t.Run("cached tags and digest: nothing", func(t *testing.T) {
		resolve(t, index, false)
		resolve(t, single, false)
		resolve(t, index, true)
		expectCounts(t, fr)
	})
	t.Run("after TagTTL: one HEAD", func(t *testing.T) {
		clk.Step(2 * time.Minute)
		if res := resolve(t, index, false); res.Digest != index.Digest {
			t.Errorf("digest %s, want %s", res.Digest, index.Digest)
		}
		expectCounts(t, fr, map[string]int{"HEAD /v2/app/manifests/v1 200": 1})
	})
	t.Run("1000 concurrent lookups: one fetch", func(t *testing.T) {
		release := make(chan struct{})
		var arrived atomic.Int32
		t.Cleanup(fr.AddFault(registrytest.Fault{Path: "/v2/popular/manifests/", Wait: release,
			Matched: func(*http.Request) { arrived.Add(1) }}))
		runCtx := startRun(t, r)
		req := resolver.Request{Image: reg.on(host, popular.Ref), Credentials: creds}
		var wg sync.WaitGroup
		results := make(chan resolver.Result, 1000)
		for i := range 1000 {
			if i%2 == 0 {
				wg.Go(func() { results <- r.Resolve(runCtx, req) })
				continue
			}
			wg.Add(1)
			r.ResolveAsync(req, func(res resolver.Result) { results <- res; wg.Done() })
		}
		// Everyone waits for the one request the proxy holds back.
		poll(t, "the manifest GET to arrive", func() bool { return arrived.Load() > 0 })
		close(release)
		wg.Wait()
		close(results)
		for res := range results {
			if diff := cmp.Diff(ok("linux/amd64", "linux/s390x"), outcomeOf(res)); diff != "" {
				t.Fatalf("(-want,+got):\n%s\nerr: %v", diff, res.Err)
			}
		}
		expectCounts(t, fr, reg.handshake, map[string]int{"GET /v2/popular/manifests/v1 200": 1})
	})
}

// configDigest returns the config blob digest of a pushed single-platform image.
func configDigest(t *testing.T, f *registrytest.Fixtures, reg *registry, p registrytest.Pushed) string {
	t.Helper()
	body, _ := f.Manifest(strings.TrimPrefix(p.Ref, reg.host+"/"))
	var m struct {
		Config struct {
			Digest string `json:"digest"`
		} `json:"config"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Config.Digest == "" {
		t.Fatalf("decoding %s: %v", p.Ref, err)
	}
	return m.Config.Digest
}

package resolver

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// TestRequestCounts pins down exactly what the resolver asks a registry, since every
// manifest GET counts against Docker Hub's pull limit and every round trip is latency.
func TestRequestCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []registrytest.Option
		// handshake is what authenticating to a repository costs, once per repository.
		handshake map[string]int
	}{
		{
			name:      "no auth",
			handshake: map[string]int{"GET /v2/ 200": 1},
		},
		{
			name:      "basic",
			opts:      []registrytest.Option{registrytest.WithBasicAuth("user", "pass")},
			handshake: map[string]int{"GET /v2/ 401": 1},
		},
		{
			name:      "bearer",
			opts:      []registrytest.Option{registrytest.WithBearerAuth("user", "pass")},
			handshake: map[string]int{"GET /v2/ 401": 1, "GET /token 200": 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := registrytest.NewMemory(t, tc.opts...)
			f := m.Fixtures(t)
			index := f.Index("app:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
			sameRepo := f.Index("app:v2", registrytest.OCI, "linux/amd64")
			single := f.Image("single:v1", registrytest.Docker, "linux/arm64")
			moving := f.Index("moving:v1", registrytest.OCI, "linux/amd64")
			popular := f.Index("popular:v1", registrytest.OCI, "linux/amd64", "linux/s390x")
			singleConfig := configDigest(t, f, single)

			clk := testingclock.NewFakeClock(time.Now())
			// Expired answers are misses here: each step counts what one resolution sends.
			r := newTestResolver(t, Options{Clock: clk, Cache: CacheOptions{TagTTL: time.Minute, DigestTTL: time.Hour, StaleWhileRevalidate: -1}})
			c := credsFor(m.Host(), cred("user", "user", "pass"))
			if len(tc.opts) == 0 {
				c = nil
			}
			resolve := func(t *testing.T, image string) Result {
				t.Helper()
				res := r.Resolve(testContext(t), Request{Image: image, Credentials: c})
				if res.Err != nil {
					t.Fatalf("Resolve(%s): %v", image, res.Err)
				}
				return res
			}
			expect := func(t *testing.T, want map[string]int, extra ...map[string]int) {
				t.Helper()
				all := map[string]int{}
				for _, w := range append([]map[string]int{want}, extra...) {
					for k, v := range w {
						all[k] += v
					}
				}
				if diff := cmp.Diff(all, m.Requests.Counts()); diff != "" {
					t.Errorf("requests (-want,+got):\n%s", diff)
				}
				m.Requests.Reset()
			}
			m.Requests.Reset()

			t.Run("index: one manifest GET after the handshake", func(t *testing.T) {
				resolve(t, index.Ref)
				expect(t, map[string]int{"GET /v2/app/manifests/v1 200": 1}, tc.handshake)
			})
			t.Run("same repository: no new handshake", func(t *testing.T) {
				resolve(t, sameRepo.Ref)
				expect(t, map[string]int{"GET /v2/app/manifests/v2 200": 1})
			})
			t.Run("single-platform image: manifest and config", func(t *testing.T) {
				resolve(t, single.Ref)
				expect(t, map[string]int{
					"GET /v2/single/manifests/v1 200":               1,
					"GET /v2/single/blobs/" + singleConfig + " 200": 1,
				}, tc.handshake)
			})
			t.Run("cached tag and digest: nothing", func(t *testing.T) {
				resolve(t, index.Ref)
				resolve(t, single.Ref)
				resolve(t, index.Ref) // not the same as index.DigestRef: another key
				expect(t, map[string]int{})
			})
			t.Run("after TagTTL: one HEAD", func(t *testing.T) {
				clk.Step(2 * time.Minute)
				if _, found := r.Lookup(Request{Image: index.Ref, Credentials: c}); found {
					t.Fatal("Lookup served an expired tag")
				}
				res := resolve(t, index.Ref)
				if res.Digest != index.Digest {
					t.Errorf("digest %s, want %s", res.Digest, index.Digest)
				}
				expect(t, map[string]int{"HEAD /v2/app/manifests/v1 200": 1})
				if got, found := r.Lookup(Request{Image: index.Ref, Credentials: c}); !found || got.Err != nil {
					t.Errorf("Lookup after revalidation = %v, %v", got, found)
				}
			})
			t.Run("moved tag: one HEAD and one GET of the new digest", func(t *testing.T) {
				resolve(t, moving.Ref)
				moved := f.Index("moving:v1", registrytest.OCI, "linux/arm64")
				m.Requests.Reset()
				clk.Step(2 * time.Minute)
				res := resolve(t, moving.Ref)
				if diff := cmp.Diff(ok("linux/arm64"), outcomeOf(res)); diff != "" || res.Digest != moved.Digest {
					t.Errorf("(-want,+got):\n%s\ndigest %s, want %s", diff, res.Digest, moved.Digest)
				}
				expect(t, map[string]int{
					"HEAD /v2/moving/manifests/v1 200":                  1,
					"GET /v2/moving/manifests/" + moved.Digest + " 200": 1,
				})
			})
			t.Run("digest of a cached tag: nothing", func(t *testing.T) {
				resolve(t, index.DigestRef())
				expect(t, map[string]int{})
			})
			t.Run("after DigestTTL: one HEAD, and the hourly handshake", func(t *testing.T) {
				clk.Step(2 * time.Hour)
				resolve(t, index.DigestRef())
				expect(t, map[string]int{"HEAD /v2/app/manifests/" + index.Digest + " 200": 1}, tc.handshake)
			})
			t.Run("registry failing at revalidation: the stale answer, one HEAD", func(t *testing.T) {
				remove := m.AddFault(registrytest.Fault{Method: http.MethodHead, Status: http.StatusServiceUnavailable})
				res := resolve(t, sameRepo.Ref) // its tag expired with the two hours
				remove()
				if diff := cmp.Diff(ok("linux/amd64"), outcomeOf(res)); diff != "" {
					t.Errorf("(-want,+got):\n%s", diff)
				}
				if want := clk.Now().Add(DefaultNegativeTTL); !res.Expires.Equal(want) {
					t.Errorf("stale answer expires %v, want after NegativeTTL, %v", res.Expires, want)
				}
				expect(t, map[string]int{"HEAD /v2/app/manifests/v2 503": 1})
				if _, found := r.Lookup(Request{Image: sameRepo.Ref, Credentials: c}); !found {
					t.Error("Lookup does not serve the stale answer")
				}
			})
			t.Run("deleted tag: HEAD, then a GET that reports it", func(t *testing.T) {
				f.Delete("app:v2", false)
				m.Requests.Reset()
				clk.Step(2 * time.Minute)
				res := r.Resolve(testContext(t), Request{Image: sameRepo.Ref, Credentials: c})
				if diff := cmp.Diff(failed(ReasonNotFound), outcomeOf(res)); diff != "" {
					t.Errorf("(-want,+got):\n%s", diff)
				}
				expect(t, map[string]int{"HEAD /v2/app/manifests/v2 404": 1, "GET /v2/app/manifests/v2 404": 1})
			})
			t.Run("1000 concurrent lookups: one fetch", func(t *testing.T) {
				release := make(chan struct{})
				var arrived atomic.Int32
				t.Cleanup(m.AddFault(registrytest.Fault{Path: "/v2/popular/manifests/", Wait: release,
					Matched: func(*http.Request) { arrived.Add(1) }}))
				runCtx, _ := startRun(t, r)
				var wg sync.WaitGroup
				results := make(chan Result, 1000)
				for i := range 1000 {
					req := Request{Image: popular.Ref, Credentials: c}
					if i%2 == 0 {
						wg.Go(func() { results <- r.Resolve(runCtx, req) })
						continue
					}
					wg.Add(1)
					r.ResolveAsync(req, func(res Result) { results <- res; wg.Done() })
				}
				// Everyone is waiting on the one request the registry holds back.
				poll(t, "the manifest GET to arrive", func() bool { return arrived.Load() > 0 })
				close(release)
				wg.Wait()
				close(results)
				for res := range results {
					if diff := cmp.Diff(ok("linux/amd64", "linux/s390x"), outcomeOf(res)); diff != "" {
						t.Fatalf("(-want,+got):\n%s\nerr: %v", diff, res.Err)
					}
				}
				expect(t, map[string]int{"GET /v2/popular/manifests/v1 200": 1}, tc.handshake)
			})
		})
	}
}

// configDigest returns the config blob digest of a pushed single-platform image.
func configDigest(t *testing.T, f *registrytest.Fixtures, p registrytest.Pushed) string {
	t.Helper()
	body, _ := f.Manifest(p.Ref[strings.Index(p.Ref, "/")+1:])
	m, err := decodeManifest(body)
	if err != nil || m.Config == nil {
		t.Fatalf("decoding %s: %v", p.Ref, err)
	}
	return m.Config.Digest
}

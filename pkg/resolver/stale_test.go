package resolver

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// Within staleWhileRevalidate of its expiry an answer is still served, and one
// HEAD in the background refreshes it: what pods wait for when it is off.
// Beyond that window, and for failures, an expired answer is a miss.
func TestStaleWhileRevalidate(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)
	app := f.Index("app:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	missingRef := m.Host() + "/missing:v1"

	for _, tc := range []struct {
		name string
		swr  time.Duration
	}{
		{name: "on", swr: 10 * time.Minute},
		{name: "off", swr: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			r := newTestResolver(t, Options{Clock: clk, Cache: CacheOptions{
				TagTTL: time.Minute, DigestTTL: time.Hour, NegativeTTL: 30 * time.Second, StaleWhileRevalidate: tc.swr,
			}})
			startRun(t, r)
			ctx := testContext(t)
			if res := r.Resolve(ctx, Request{Image: app.Ref}); res.Err != nil {
				t.Fatal(res.Err)
			}
			if res := r.Resolve(ctx, Request{Image: missingRef}); res.Err == nil {
				t.Fatal("a missing image resolved")
			}
			m.Requests.Reset()

			clk.Step(2 * time.Minute) // the tag expired a minute ago
			res, found := r.Lookup(Request{Image: app.Ref})
			if tc.swr < 0 {
				if found {
					t.Fatal("an expired tag was served with staleWhileRevalidate off")
				}
				if n := m.Requests.Len(); n != 0 {
					t.Errorf("a miss sent %d requests; Lookup must not", n)
				}
				return
			}
			if !found || res.Err != nil || res.Digest != app.Digest || res.Platforms.String() != "linux/amd64,linux/arm64" {
				t.Fatalf("Lookup = %+v, %v; want the stale answer", res, found)
			}
			poll(t, "the background revalidation", func() bool {
				res, found := r.Lookup(Request{Image: app.Ref})
				return found && res.Expires.After(clk.Now())
			})
			if got := m.Requests.Counts(); got["HEAD /v2/app/manifests/v1 200"] != 1 || len(got) != 1 {
				t.Errorf("the revalidation sent %v, want one HEAD", got)
			}

			if _, found := r.Lookup(Request{Image: missingRef}); found {
				t.Error("an expired failure was served")
			}

			clk.Step(time.Minute + 10*time.Minute + time.Second) // past expiry + staleWhileRevalidate
			if _, found := r.Lookup(Request{Image: app.Ref}); found {
				t.Error("an answer expired longer ago than staleWhileRevalidate was served")
			}
		})
	}
}

//go:build linux

package resolver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/resolver"
	"github.com/archfilter/archfilter/pkg/resolver/transport"
)

// TestFailures checks that each way a registry can fail an image ends in the right Reason,
// with an error naming the image, the registry and the credential. On Distribution, the
// faults are injected by a proxy in front of it (Distribution has no fault injection, and
// StartDistribution turns its access log off); the images live in Distribution.
func TestFailures(t *testing.T) {
	forEachRegistry(t, func(t *testing.T, reg *registry) {
		f := reg.fixtures(t)
		app := f.Index("app:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
		limited := f.Index("limited:v1", registrytest.OCI, "linux/amd64")
		slow := f.Image("slow:v1", registrytest.Docker, "linux/amd64")
		sparse := f.Sparse("sparse:v1", []string{"linux/amd64"}, []string{"linux/arm64"})

		// The resolver's cap is 4 MiB by default. Distribution refuses manifest pushes over
		// 4 MiB ("http: request body too large"), so it can never serve one above the
		// default cap: there the case lowers the cap to 1 MiB and pushes a manifest just
		// above it, which Distribution serves with its Content-Length.
		var oversized registrytest.Pushed
		var oversizedOpts resolver.Options
		if reg.kind == "memory" {
			oversized = f.Oversized("big:v1", resolver.DefaultMaxManifestBytes+1)
		} else {
			oversizedOpts.MaxManifestBytes = 1 << 20
			oversized = f.Oversized("big:v1", 1<<20+1)
		}

		host := reg.faulty.Host()
		creds := podSecretCredentials(t, host)
		const source = "pod imagePullSecret tenant/regcred"

		tests := []struct {
			name  string
			image string
			fault *registrytest.Fault
			opts  resolver.Options
			want  errorFields
			// requests, when set, are what the registry must have answered, beyond the
			// handshake.
			requests map[string]int
		}{
			{
				name:     "404: tag",
				image:    reg.on(host, app.Ref) + "-missing",
				want:     errorFields{StatusCode: http.StatusNotFound, Reason: resolver.ReasonNotFound},
				requests: map[string]int{"GET /v2/app/manifests/v1-missing 404": 1},
			},
			{
				name:  "404: repository",
				image: host + "/nope:v1",
				want:  errorFields{StatusCode: http.StatusNotFound, Reason: resolver.ReasonNotFound},
			},
			{
				name:  "404: child digest a sparse mirror lacks",
				image: reg.on(host, sparse.ChildRef("linux/arm64")),
				want:  errorFields{StatusCode: http.StatusNotFound, Reason: resolver.ReasonNotFound},
			},
			{
				name:  "429 with Retry-After beyond the budget",
				image: reg.on(host, limited.Ref),
				fault: &registrytest.Fault{Method: http.MethodGet, Path: "/v2/limited/manifests/", Status: http.StatusTooManyRequests,
					Header: http.Header{"Retry-After": {"3600"}}},
				want: errorFields{StatusCode: http.StatusTooManyRequests, Reason: resolver.ReasonRateLimited},
				// Not retried: the wait would not fit.
				requests: map[string]int{"GET /v2/limited/manifests/v1 429": 1},
			},
			{
				name:  "slow server past the budget",
				image: reg.on(host, slow.Ref),
				fault: &registrytest.Fault{Method: http.MethodGet, Path: "/v2/slow/manifests/", Delay: time.Hour},
				opts:  resolver.Options{ResolveTimeout: 500 * time.Millisecond},
				want:  errorFields{Reason: resolver.ReasonTimeout},
			},
			{
				name:  "oversized manifest",
				image: reg.on(host, oversized.Ref),
				opts:  oversizedOpts,
				want:  errorFields{Reason: resolver.ReasonInvalidManifest},
			},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, ctx := ktesting.NewTestContext(t)
				if tc.fault != nil {
					t.Cleanup(reg.faulty.AddFault(*tc.fault))
				}
				reg.faulty.Reset()
				r := newResolver(t, transport.Options{}, tc.opts)
				req := resolver.Request{Image: tc.image, Credentials: creds}
				res := r.Resolve(ctx, req)
				e := resolveErr(t, res)
				want := tc.want
				want.Image, want.Registry, want.CredentialSource = tc.image, host, source
				got := errorFields{e.Image, e.Registry, e.CredentialSource, e.StatusCode, e.Reason}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Resolve(%s) error (-want,+got):\n%s\nerr: %v", tc.image, diff, e)
				}
				if tc.requests != nil {
					expectCounts(t, reg.faulty, reg.handshake, tc.requests)
				}
				if cached, found := r.Lookup(req); !found || resolver.ReasonOf(cached.Err) != tc.want.Reason {
					t.Errorf("Lookup after the failure = %+v, %t; want the cached %s", cached, found, tc.want.Reason)
				}
			})
		}

		t.Run("429 with Retry-After within the budget: success after the wait", func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			retried := reg.fixtures(t).Index("retried:v1", registrytest.OCI, "linux/arm64", "linux/s390x")
			t.Cleanup(reg.faulty.AddFault(registrytest.Fault{Method: http.MethodGet, Path: "/v2/retried/manifests/",
				Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"5"}}, Times: 1}))
			reg.faulty.Reset()
			// The transport waits out Retry-After on its clock: a fake one shows that it
			// waits, and for how long, without the test sleeping.
			clk := testingclock.NewFakeClock(time.Now())
			r := newResolver(t, transport.Options{Clock: clk}, resolver.Options{ResolveTimeout: time.Minute})
			image := reg.on(host, retried.Ref)
			done := make(chan resolver.Result, 1)
			go func() { done <- r.Resolve(ctx, resolver.Request{Image: image, Credentials: creds}) }()

			poll(t, "the transport to wait out Retry-After", clk.HasWaiters)
			expectCounts(t, reg.faulty, reg.handshake, map[string]int{"GET /v2/retried/manifests/v1 429": 1})
			clk.Step(5*time.Second - time.Millisecond)
			if !clk.HasWaiters() {
				t.Fatal("the transport retried before Retry-After passed")
			}
			clk.Step(time.Millisecond)
			res := <-done
			if diff := cmp.Diff(ok("linux/arm64", "linux/s390x"), outcomeOf(res)); diff != "" {
				t.Errorf("Resolve(%s) (-want,+got):\n%s\nerr: %v", image, diff, res.Err)
			}
			expectCounts(t, reg.faulty, map[string]int{"GET /v2/retried/manifests/v1 200": 1})
		})
	})
}

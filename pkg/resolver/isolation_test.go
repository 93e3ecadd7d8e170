package resolver

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// TestCrossTenantIsolation checks that an answer obtained with one tenant's credential is
// never served to a tenant that does not hold it, from the cache or from a shared fetch.
func TestCrossTenantIsolation(t *testing.T) {
	m := registrytest.NewMemory(t, registrytest.WithBasicAuth("user", "pass", "private/*"))
	f := m.Fixtures(t)
	priv := f.Index("private/app:v1", registrytest.OCI, "linux/arm64")
	pub := f.Index("public/app:v1", registrytest.OCI, "linux/amd64")

	owner := credsFor(m.Host(), cred("owner", "user", "pass"))
	// Another secret with the same account: a different ID, so a different scope.
	sameAccount := credsFor(m.Host(), cred("other-secret", "user", "pass"))
	stranger := credsFor(m.Host(), cred("stranger", "user", "wrong"))
	noCreds := Request{Image: priv.Ref}

	r := newTestResolver(t, Options{})
	ctx := testContext(t)

	if res := r.Resolve(ctx, Request{Image: priv.Ref, Credentials: owner}); res.Err != nil {
		t.Fatalf("owner: %v", res.Err)
	}

	for _, tc := range []struct {
		name  string
		req   Request
		found bool
	}{
		{"owner", Request{Image: priv.Ref, Credentials: owner}, true},
		{"owner by digest shares the digest's answer", Request{Image: priv.DigestRef(), Credentials: owner}, true},
		{"no credentials by digest", Request{Image: priv.DigestRef()}, false},
		{"no credentials", noCreds, false},
		{"a stranger's credential", Request{Image: priv.Ref, Credentials: stranger}, false},
		{"the same account through another secret", Request{Image: priv.Ref, Credentials: sameAccount}, false},
		{"the owner's credential offered for another host", Request{Image: priv.Ref, Credentials: credsFor("other.example.com", cred("owner", "user", "pass"))}, false},
	} {
		t.Run("Lookup/"+tc.name, func(t *testing.T) {
			if _, found := r.Lookup(tc.req); found != tc.found {
				t.Errorf("found = %v, want %v", found, tc.found)
			}
		})
	}

	t.Run("Resolve without the credential fetches and fails", func(t *testing.T) {
		for _, req := range []Request{noCreds, {Image: priv.Ref, Credentials: stranger}} {
			if got := ReasonOf(r.Resolve(ctx, req).Err); got != ReasonUnauthorized {
				t.Errorf("Resolve: %q, want Unauthorized", got)
			}
			// Their cached failure does not shadow the owner's answer.
			if res, found := r.Lookup(Request{Image: priv.Ref, Credentials: owner}); !found || res.Err != nil {
				t.Errorf("owner's Lookup after a stranger's failure = %v, %v", res, found)
			}
		}
	})

	t.Run("anonymous answers are everyone's", func(t *testing.T) {
		if res := r.Resolve(ctx, Request{Image: pub.Ref}); res.Err != nil {
			t.Fatal(res.Err)
		}
		m.Requests.Reset()
		for _, c := range []Credentials{nil, owner, stranger} {
			if res, found := r.Lookup(Request{Image: pub.Ref, Credentials: c}); !found || res.Err != nil {
				t.Errorf("Lookup(public) = %v, %v", res, found)
			}
		}
	})

	t.Run("concurrent fetches are not shared across scopes", func(t *testing.T) {
		other := f.Index("private/other:v1", registrytest.OCI, "linux/s390x")
		release := make(chan struct{})
		var arrived atomic.Int32
		t.Cleanup(m.AddFault(registrytest.Fault{Path: "/v2/private/other/manifests/", Wait: release,
			Matched: func(*http.Request) { arrived.Add(1) }}))
		results := map[string]Result{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for name, c := range map[string]Credentials{"owner": owner, "none": nil, "stranger": stranger} {
			wg.Go(func() {
				res := r.Resolve(ctx, Request{Image: other.Ref, Credentials: c})
				mu.Lock()
				results[name] = res
				mu.Unlock()
			})
		}
		// Three scopes, three requests held at the registry at once.
		poll(t, "three manifest requests", func() bool { return arrived.Load() == 3 })
		close(release)
		wg.Wait()
		got := map[string]outcome{}
		for name, res := range results {
			got[name] = outcomeOf(res)
		}
		want := map[string]outcome{
			"owner":    ok("linux/s390x"),
			"none":     failed(ReasonUnauthorized),
			"stranger": failed(ReasonUnauthorized),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want,+got):\n%s", diff)
		}
	})
}

package transport

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrtransport "github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"k8s.io/klog/v2/ktesting"
)

// Credentials set on the request never follow a redirect to another host,
// even where net/http would forward them (same hostname, other port).
func TestRedirectDropsCredentialsAcrossHosts(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b := newRecorder(t, nil)
	a := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
		}
	})
	creds := http.Header{"Authorization": {"Basic c2VjcmV0"}, "Cookie": {"session=secret"}}

	t.Run("net/http alone forwards them to another port", func(t *testing.T) {
		// The finding that motivates withoutCrossHostCredentials: net/http
		// compares hostnames without ports.
		before := b.requests()
		if _, err := get(ctx, http.DefaultTransport, a.URL+"/v2/?to="+b.URL+"/v2/x", creds); err != nil {
			t.Fatal(err)
		}
		if got := b.header(before).Get("Authorization"); got == "" {
			t.Errorf("net/http dropped Authorization on a same-hostname redirect; update the comment on sensitiveHeaders")
		}
	})
	tr := newTransport(t, Options{})
	t.Run("other host", func(t *testing.T) {
		before := b.requests()
		status, err := get(ctx, tr, a.URL+"/v2/?to="+b.URL+"/v2/x", creds)
		if err != nil || status != http.StatusOK {
			t.Fatalf("got %d, %v", status, err)
		}
		h := b.header(before)
		for _, k := range []string{"Authorization", "Cookie"} {
			if v := h.Get(k); v != "" {
				t.Errorf("redirect target got %s: %q", k, v)
			}
		}
	})
	t.Run("same host", func(t *testing.T) {
		before := a.requests()
		status, err := get(ctx, tr, a.URL+"/v2/?to=/v2/y", creds)
		if err != nil || status != http.StatusOK {
			t.Fatalf("got %d, %v", status, err)
		}
		if got := a.header(before + 1).Get("Authorization"); got != "Basic c2VjcmV0" {
			t.Errorf("same-host redirect lost Authorization, got %q", got)
		}
	})
	t.Run("back to the first host after another", func(t *testing.T) {
		// A → B → A: the final hop is the original registry again.
		c := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, a.URL+"/v2/final", http.StatusFound)
		})
		status, err := get(ctx, tr, a.URL+"/v2/?to="+c.URL+"/v2/", creds)
		if err != nil || status != http.StatusOK {
			t.Fatalf("got %d, %v", status, err)
		}
		if got := c.header(c.requests() - 1).Get("Authorization"); got != "" {
			t.Errorf("intermediate host got Authorization %q", got)
		}
	})
}

// What ggcr's auth transports do on a redirect, through our RoundTripper: the
// token or basic credentials go to the registry, never to the redirect target.
func TestGGCRRedirectCredentials(t *testing.T) {
	for _, scheme := range []string{"Basic", "Bearer"} {
		t.Run(scheme, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			blobs := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, `{}`)
			})
			var registry *recorder
			registry = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/token":
					fmt.Fprint(w, `{"token":"secret-token"}`)
				case r.Header.Get("Authorization") == "":
					if scheme == "Basic" {
						w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
					} else {
						w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="test"`, registry.URL))
					}
					w.WriteHeader(http.StatusUnauthorized)
				case r.URL.Path == "/v2/":
				case strings.HasSuffix(r.URL.Path, "/blobs/sha256:other"):
					http.Redirect(w, r, blobs.URL+"/blob", http.StatusTemporaryRedirect)
				case strings.HasSuffix(r.URL.Path, "/blobs/sha256:same"):
					http.Redirect(w, r, "/v2/repo/blobs/final", http.StatusTemporaryRedirect)
				default:
					fmt.Fprint(w, `{}`)
				}
			})
			tr := newTransport(t, Options{})
			reg, err := name.NewRegistry(registry.host(), name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			auth := authn.FromConfig(authn.AuthConfig{Username: "user", Password: "pass"})
			rt, err := ggcrtransport.NewWithContext(ctx, reg, auth, tr.RoundTripper(), []string{reg.Repo("repo").Scope(ggcrtransport.PullScope)})
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Transport: rt}

			resp, err := client.Get(registry.URL + "/v2/repo/blobs/sha256:other")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := blobs.header(blobs.requests() - 1).Get("Authorization"); got != "" {
				t.Errorf("redirect target got Authorization %q", got)
			}

			before := registry.requests()
			resp, err = client.Get(registry.URL + "/v2/repo/blobs/sha256:same")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := registry.header(before + 1).Get("Authorization")
			if !strings.HasPrefix(got, scheme+" ") {
				t.Errorf("same-host redirect hop got Authorization %q, want %s credentials", got, scheme)
			}
		})
	}
}

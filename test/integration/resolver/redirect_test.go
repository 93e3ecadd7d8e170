//go:build linux

package resolver_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/resolver"
	"github.com/archfilter/archfilter/pkg/resolver/transport"
)

// TestRedirectToLinkLocal puts a server in front of each registry that answers manifest
// GETs with 307 to a cloud metadata address: the resolver must refuse the hop
// (RegistryNotAllowed) without connecting there. A redirect to another, harmless host is
// followed, without the registry's Authorization.
func TestRedirectToLinkLocal(t *testing.T) {
	forEachRegistry(t, func(t *testing.T, reg *registry) {
		img := reg.fixtures(t).Index("redirected:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
		fr := newFront(t, reg.host)
		image := reg.on(fr.Host(), img.Ref)
		creds := podSecretCredentials(t, fr.Host())
		const source = "pod imagePullSecret tenant/regcred"

		// canary is where the guard would connect if it dialled "metadata.test": the name
		// resolves to it first, and to the metadata address second.
		canary := newCanary(t)
		names := &recordingResolver{table: map[string][]netip.Addr{
			"metadata.test": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("169.254.169.254")},
		}}

		for _, tc := range []struct {
			name     string
			location string
			// wantText is the part of the error that says why the hop was refused.
			wantText string
			// wantLookups are the names the transport had to resolve.
			wantLookups []string
		}{
			{
				name:     "plain HTTP to the metadata address",
				location: "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
				wantText: "plain HTTP to 169.254.169.254",
			},
			{
				name:     "HTTPS to the metadata address",
				location: "https://169.254.169.254/latest/meta-data/iam/security-credentials/",
				wantText: "169.254.169.254 is a link-local address",
			},
			{
				name:     "IPv4-mapped IPv6 metadata address",
				location: "https://[::ffff:169.254.169.254]/latest/meta-data/",
				wantText: "link-local address",
			},
			{
				name:     "AWS IPv6 metadata address",
				location: "https://[fd00:ec2::254]/latest/meta-data/",
				wantText: "fd00:ec2::254 is a cloud metadata address",
			},
			{
				name:        "a name resolving to the metadata address",
				location:    "https://metadata.test:" + canary.port() + "/latest/meta-data/",
				wantText:    "metadata.test resolves to 169.254.169.254",
				wantLookups: []string{"metadata.test"},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, ctx := ktesting.NewTestContext(t)
				t.Cleanup(fr.Redirect(http.MethodGet, "/v2/redirected/manifests/", func(*http.Request) string { return tc.location }))
				fr.Reset()
				names.reset()
				r := newResolver(t, transport.Options{Resolver: names}, resolver.Options{})

				res := r.Resolve(ctx, resolver.Request{Image: image, Credentials: creds})
				e := resolveErr(t, res)
				got := errorFields{e.Image, e.Registry, e.CredentialSource, e.StatusCode, e.Reason}
				want := errorFields{Image: image, Registry: fr.Host(), CredentialSource: source, Reason: resolver.ReasonNotAllowed}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("error (-want,+got):\n%s\nerr: %v", diff, e)
				}
				if !strings.Contains(e.Error(), tc.wantText) {
					t.Errorf("error %q does not say %q", e, tc.wantText)
				}
				// The registry did redirect, once: the refusal is not a retry loop.
				if n := fr.Counts()["GET /v2/redirected/manifests/v1 307"]; n != 1 {
					t.Errorf("registry redirected %d times, want 1: %v", n, fr.Counts())
				}
				if diff := cmp.Diff(tc.wantLookups, names.asked()); diff != "" {
					t.Errorf("name lookups (-want,+got):\n%s", diff)
				}
				if n := canary.connections(); n != 0 {
					t.Errorf("%d connections reached the address the refused name also resolves to", n)
				}
			})
		}

		// Registries legitimately redirect blobs to object storage: the config blob of a
		// single-arch image is the likelier way to a metadata address.
		t.Run("config blob redirected to the metadata address", func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			single := reg.fixtures(t).Image("redirected-blob:v1", registrytest.Docker, "linux/arm64")
			t.Cleanup(fr.Redirect(http.MethodGet, "/v2/redirected-blob/blobs/", func(*http.Request) string {
				return "https://169.254.169.254/latest/meta-data/"
			}))
			fr.Reset()
			r := newResolver(t, transport.Options{}, resolver.Options{})
			img := reg.on(fr.Host(), single.Ref)
			e := resolveErr(t, r.Resolve(ctx, resolver.Request{Image: img, Credentials: creds}))
			got := errorFields{e.Image, e.Registry, e.CredentialSource, e.StatusCode, e.Reason}
			want := errorFields{Image: img, Registry: fr.Host(), CredentialSource: source, Reason: resolver.ReasonNotAllowed}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error (-want,+got):\n%s\nerr: %v", diff, e)
			}
			if !strings.Contains(e.Error(), "169.254.169.254 is a link-local address") {
				t.Errorf("error %q does not say why the hop was refused", e)
			}
		})

		t.Run("another host: followed without the registry's Authorization", func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			body, mediaType := reg.fixtures(t).Manifest("redirected:v1")
			var (
				mu   sync.Mutex
				auth []string
			)
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				auth = append(auth, r.Header.Get("Authorization"))
				mu.Unlock()
				w.Header().Set("Content-Type", mediaType)
				_, _ = w.Write(body)
			}))
			t.Cleanup(other.Close)
			t.Cleanup(fr.Redirect(http.MethodGet, "/v2/redirected/manifests/", func(*http.Request) string { return other.URL + "/blob-store/manifest" }))
			fr.Reset()
			r := newResolver(t, transport.Options{}, resolver.Options{})

			res := r.Resolve(ctx, resolver.Request{Image: image, Credentials: creds})
			if diff := cmp.Diff(ok("linux/amd64", "linux/arm64"), outcomeOf(res)); diff != "" {
				t.Errorf("(-want,+got):\n%s\nerr: %v", diff, res.Err)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff([]string{""}, auth); diff != "" {
				t.Errorf("Authorization headers the other host got (-want,+got):\n%s", diff)
			}
		})
	})
}

// recordingResolver is the transport's HostResolver seam: it answers from a table and
// remembers what it was asked.
type recordingResolver struct {
	table map[string][]netip.Addr

	mu    sync.Mutex
	names []string
}

func (r *recordingResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.names = append(r.names, host)
	r.mu.Unlock()
	if ips, ok := r.table[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *recordingResolver) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.names...)
}

func (r *recordingResolver) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = nil
}

// canary is a TCP listener on loopback that counts the connections it accepts.
type canary struct {
	l     net.Listener
	count atomic.Int32
}

func newCanary(t *testing.T) *canary {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &canary{l: l}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.count.Add(1)
			conn.Close()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return c
}

func (c *canary) port() string {
	_, p, _ := net.SplitHostPort(c.l.Addr().String())
	return p
}

func (c *canary) connections() int { return int(c.count.Load()) }

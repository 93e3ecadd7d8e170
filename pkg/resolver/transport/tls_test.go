package transport

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"
)

func newTLSServer(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Proto", r.Proto)
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s, strings.TrimPrefix(s.URL, "https://")
}

func writeCA(t *testing.T, s *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// CAFile and Insecure apply to their own host only. (All httptest servers
// share one certificate, so trusting it for host A would verify B too if the
// setting leaked.)
func TestPerHostTLS(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	withCA, withCAHost := newTLSServer(t)
	_, noCAHost := newTLSServer(t)
	_, insecureHost := newTLSServer(t)
	_, verifiedHost := newTLSServer(t)
	tr := newTransport(t, Options{Registries: []Registry{
		{Host: withCAHost, CAFile: writeCA(t, withCA)},
		{Host: insecureHost, Insecure: true},
	}})

	tests := []struct {
		name   string
		host   string
		wantOK bool
	}{
		{name: "CA file trusted for its host", host: withCAHost, wantOK: true},
		{name: "CA file not trusted for another host", host: noCAHost},
		{name: "insecure host skips verification", host: insecureHost, wantOK: true},
		{name: "other hosts are verified", host: verifiedHost},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, err := get(ctx, tr, "https://"+tc.host+"/v2/", nil)
			if tc.wantOK {
				if err != nil || status != http.StatusOK {
					t.Fatalf("got status %d, err %v; want 200", status, err)
				}
				return
			}
			var unknownCA x509.UnknownAuthorityError
			var verifyErr *tls.CertificateVerificationError
			if !errors.As(err, &unknownCA) && !errors.As(err, &verifyErr) {
				t.Fatalf("got status %d, err %v; want a certificate verification error", status, err)
			}
		})
	}
}

func TestHTTP2(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	s, host := newTLSServer(t)
	tr := newTransport(t, Options{Registries: []Registry{{Host: host, CAFile: writeCA(t, s)}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/v2/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Proto"); got != "HTTP/2.0" {
		t.Errorf("server saw %s, want HTTP/2.0", got)
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		name string
		opts Options
		want []string // substrings of the error
	}{
		{
			name: "unreadable CA file",
			opts: Options{Registries: []Registry{{Host: "a.example.com"}, {Host: "b.example.com", CAFile: missing}}},
			want: []string{"registries[1].caFile", missing},
		},
		{
			name: "CA file without certificates",
			opts: Options{Registries: []Registry{{Host: "a.example.com", CAFile: notPEM}}},
			want: []string{"registries[0].caFile", notPEM, "no PEM certificates"},
		},
		{
			name: "host with scheme",
			opts: Options{Registries: []Registry{{Host: "https://a.example.com"}}},
			want: []string{"registries[0].host"},
		},
		{
			name: "duplicate host",
			opts: Options{Registries: []Registry{{Host: "docker.io"}, {Host: "index.docker.io"}}},
			want: []string{"registries[1].host", "twice"},
		},
		{
			name: "mirror with path",
			opts: Options{Registries: []Registry{{Host: "docker.io", Mirrors: []string{"mirror.example.com/v2"}}}},
			want: []string{"registries[0].mirrors[0]"},
		},
		{
			name: "mirror outside the allowed registries",
			opts: Options{
				Allowed:    []string{"docker.io"},
				Registries: []Registry{{Host: "docker.io", Mirrors: []string{"mirror.example.com"}}},
			},
			want: []string{"registries[0].mirrors[0]", "allowedRegistries"},
		},
		{
			name: "malformed allowed glob",
			opts: Options{Allowed: []string{"ok.example.com", "[bad"}},
			want: []string{"allowedRegistries[1]", "malformed"},
		},
		{
			name: "denied glob with path",
			opts: Options{Denied: []string{"example.com/team"}},
			want: []string{"deniedRegistries[0]"},
		},
		{
			name: "negative concurrency",
			opts: Options{MaxConcurrentPerRegistry: -1},
			want: []string{"maxConcurrentPerRegistry"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if err == nil {
				t.Fatal("New succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

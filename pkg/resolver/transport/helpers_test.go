package transport

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// fakeResolver answers from a table; names not in it do not exist.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ips, ok := f[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func newTransport(t *testing.T, opts Options) *Transport {
	t.Helper()
	tr, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// recorder is a test server that counts requests and remembers headers.
type recorder struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
	paths   []string
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.headers = append(r.headers, req.Header.Clone())
		r.paths = append(r.paths, req.URL.Path)
		r.mu.Unlock()
		if h != nil {
			h(w, req)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) host() string { return strings.TrimPrefix(r.URL, "http://") }

func (r *recorder) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.headers)
}

func (r *recorder) header(i int) http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers[i]
}

// get sends a GET through rt and returns the status and body, or the error.
func get(ctx context.Context, rt http.RoundTripper, url string, hdr http.Header) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// port returns the port of a test server URL.
func port(serverURL string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		panic(err)
	}
	return u.Port()
}

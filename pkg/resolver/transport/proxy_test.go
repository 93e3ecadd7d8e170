package transport

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/http/httpproxy"
	"k8s.io/klog/v2/ktesting"
)

// connectProxy is an HTTP CONNECT proxy on loopback that sends every tunnel to
// one upstream address, whatever host the client asked for (the test's names
// do not resolve), and records the hosts it was asked for.
type connectProxy struct {
	*httptest.Server
	upstream string
	mu       sync.Mutex
	asked    []string
}

func newConnectProxy(t *testing.T, upstream string) *connectProxy {
	t.Helper()
	p := &connectProxy{upstream: upstream}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *connectProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	p.mu.Lock()
	p.asked = append(p.asked, r.Host)
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		up.Close()
		return
	}
	go func() { _, _ = io.Copy(up, conn); up.Close() }()
	go func() { _, _ = io.Copy(conn, up); conn.Close() }()
}

func (p *connectProxy) hosts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

// Registry requests go through the proxy the environment names, NO_PROXY
// and loopback go direct, and the address guard still vets the destination
// before anything is sent to the proxy.
func TestProxy(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	reg, regAddr := newTLSServer(t) // its certificate names example.com and 127.0.0.1
	_, port, _ := net.SplitHostPort(regAddr)
	proxy := newConnectProxy(t, regAddr)
	// Names resolve through the guard's resolver only; the proxy maps every
	// tunnel to the registry.
	names := fakeResolver{
		"example.com":          addrs("127.0.0.1"),
		"metadata.example.com": addrs("169.254.169.254"),
	}
	registries := []Registry{
		{Host: "example.com:" + port, CAFile: writeCA(t, reg)},
		{Host: "metadata.example.com:" + port, CAFile: writeCA(t, reg)},
		{Host: regAddr, CAFile: writeCA(t, reg)},
	}
	viaProxy := func(noProxy string) func(*url.URL) (*url.URL, error) {
		return (&httpproxy.Config{HTTPSProxy: proxy.URL, NoProxy: noProxy}).ProxyFunc()
	}

	for _, tc := range []struct {
		name      string
		proxy     func(*url.URL) (*url.URL, error) // nil: from the environment
		env       map[string]string
		host      string
		wantErr   string // "" for success
		wantAsked []string
	}{
		{
			name:      "through the proxy",
			proxy:     viaProxy(""),
			host:      "example.com:" + port,
			wantAsked: []string{"example.com:" + port},
		},
		{
			name:      "HTTPS_PROXY from the environment",
			env:       map[string]string{"HTTPS_PROXY": proxy.URL, "NO_PROXY": ""},
			host:      "example.com:" + port,
			wantAsked: []string{"example.com:" + port},
		},
		{
			name:  "NO_PROXY goes direct",
			proxy: viaProxy("example.com"),
			host:  "example.com:" + port,
		},
		{
			name:  "loopback is never proxied",
			proxy: viaProxy(""),
			host:  regAddr,
		},
		{
			name:    "the guard vets the destination before the proxy sees it",
			proxy:   viaProxy(""),
			host:    "metadata.example.com:" + port,
			wantErr: "169.254.169.254, a link-local address",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			before := len(proxy.hosts())
			tr := newTransport(t, Options{Registries: registries, Resolver: names, Proxy: tc.proxy})
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+tc.host+"/v2/", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("request failed: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			case tc.wantErr != "" && !errors.Is(err, ErrNotAllowed):
				t.Errorf("error %v is not ErrNotAllowed", err)
			}
			if diff := cmp.Diff(tc.wantAsked, proxy.hosts()[before:], cmpEmptyAsNil); diff != "" {
				t.Errorf("proxy was asked for (-want,+got):\n%s", diff)
			}
		})
	}
}

var cmpEmptyAsNil = cmp.Transformer("emptyAsNil", func(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
})

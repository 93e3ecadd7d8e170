package transport

import (
	"errors"
	"net/http"
	"testing"

	"k8s.io/klog/v2/ktesting"
)

func TestHostPolicy(t *testing.T) {
	tests := []struct {
		name            string
		allowed, denied []string
		host            string
		want            bool
	}{
		{name: "empty lists allow any", host: "registry.example.com", want: true},
		{name: "exact", allowed: []string{"ghcr.io"}, host: "ghcr.io", want: true},
		{name: "not listed", allowed: []string{"ghcr.io"}, host: "quay.io", want: false},
		{name: "star is one label", allowed: []string{"*.example.com"}, host: "a.example.com", want: true},
		{name: "star is not two labels", allowed: []string{"*.example.com"}, host: "a.b.example.com", want: false},
		{name: "star is not zero labels", allowed: []string{"*.example.com"}, host: "example.com", want: false},
		{name: "star inside a label", allowed: []string{"reg-*.example.com"}, host: "reg-eu.example.com", want: true},
		{name: "glob without port does not match a port", allowed: []string{"*.example.com"}, host: "a.example.com:5000", want: false},
		{name: "port must match", allowed: []string{"registry.example.com:5000"}, host: "registry.example.com:5000", want: true},
		{name: "other port", allowed: []string{"registry.example.com:5000"}, host: "registry.example.com:5001", want: false},
		{name: "glob with port needs the port", allowed: []string{"registry.example.com:5000"}, host: "registry.example.com", want: false},
		{name: "default https port is no port", allowed: []string{"registry.example.com:443"}, host: "registry.example.com", want: true},
		{name: "case-insensitive", allowed: []string{"Registry.Example.COM"}, host: "registry.example.com", want: true},
		{name: "deny wins", allowed: []string{"*.example.com"}, denied: []string{"bad.example.com"}, host: "bad.example.com", want: false},
		{name: "deny only", denied: []string{"*.internal"}, host: "registry.internal", want: false},
		{name: "deny leaves others", denied: []string{"*.internal"}, host: "ghcr.io", want: true},
		{name: "docker.io covers index.docker.io", allowed: []string{"docker.io"}, host: "index.docker.io", want: true},
		{name: "docker.io covers registry-1.docker.io", allowed: []string{"docker.io"}, host: "registry-1.docker.io", want: true},
		{name: "docker.io does not cover auth.docker.io", allowed: []string{"docker.io"}, host: "auth.docker.io", want: false},
		{name: "deny *.docker.io still denies index.docker.io", denied: []string{"*.docker.io"}, host: "index.docker.io", want: false},
		{name: "deny docker.io denies index.docker.io", denied: []string{"docker.io"}, host: "index.docker.io", want: false},
		{name: "IPv6 with port", allowed: []string{"[fd00::1]:5000"}, host: "[fd00::1]:5000", want: true},
		{name: "IPv4 glob", allowed: []string{"10.0.0.*:5000"}, host: "10.0.0.7:5000", want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newHostPolicy(tc.allowed, tc.denied)
			if err != nil {
				t.Fatal(err)
			}
			err = p.check(canonicalHost("https", tc.host))
			if got := err == nil; got != tc.want {
				t.Errorf("check(%q) = %v, want allowed=%v", tc.host, err, tc.want)
			}
			if err != nil && !errors.Is(err, ErrNotAllowed) {
				t.Errorf("error %v does not wrap ErrNotAllowed", err)
			}
		})
	}
}

// A refused host is never contacted, including as a redirect target, and
// plain HTTP needs an insecure registry (or loopback).
func TestPolicyOnRequestsAndRedirects(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	target := newRecorder(t, nil)
	redirector := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusTemporaryRedirect)
	})
	tr := newTransport(t, Options{
		Denied: []string{target.host()},
		Resolver: fakeResolver{
			"registry.test": addrs("127.0.0.1"),
			"plain.test":    addrs("127.0.0.1"),
		},
		Registries: []Registry{{Host: "registry.test:" + port(target.URL), Insecure: true}},
	})

	tests := []struct {
		name    string
		url     string
		wantErr bool
	}{
		{name: "denied host", url: target.URL + "/v2/", wantErr: true},
		{name: "redirect to denied host", url: redirector.URL + "/v2/?to=" + target.URL + "/v2/", wantErr: true},
		{name: "plain HTTP to a host not marked insecure", url: "http://plain.test:" + port(target.URL) + "/v2/", wantErr: true},
		{name: "redirect downgrading to plain HTTP", url: redirector.URL + "/v2/?to=http://plain.test:" + port(target.URL) + "/v2/", wantErr: true},
		{name: "plain HTTP to an insecure registry", url: "http://registry.test:" + port(target.URL) + "/v2/"},
		{name: "redirect to an insecure registry", url: redirector.URL + "/v2/?to=http://registry.test:" + port(target.URL) + "/v2/"},
		{name: "unsupported scheme", url: "ftp://registry.test/v2/", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := target.requests()
			status, err := get(ctx, tr, tc.url, nil)
			if tc.wantErr {
				if !errors.Is(err, ErrNotAllowed) {
					t.Fatalf("got status %d, err %v; want ErrNotAllowed", status, err)
				}
				if n := target.requests() - before; n != 0 {
					t.Errorf("refused host got %d requests", n)
				}
				return
			}
			if err != nil || status != http.StatusOK {
				t.Fatalf("got status %d, err %v; want 200", status, err)
			}
		})
	}
	if n := tr.breakers.open(); n != 0 {
		t.Errorf("policy refusals opened %d circuits; they say nothing about registry health", n)
	}
}

package transport

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"
)

func TestRefusedAddr(t *testing.T) {
	tests := []struct {
		addr    string
		refused bool
	}{
		{"169.254.169.254", true}, // AWS, GCP, Azure, OpenStack metadata
		{"169.254.0.1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"fd00:ec2::254", true},   // AWS metadata over IPv6
		{"100.100.100.200", true}, // Alibaba Cloud metadata
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"::", true},
		{"::ffff:169.254.169.254", true}, // IPv4-mapped
		{"64:ff9b::a9fe:a9fe", true},     // NAT64 of 169.254.169.254
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"255.255.255.255", true},
		{"127.0.0.1", false}, // in-cluster registries and port-forwards
		{"::1", false},
		{"10.0.0.5", false},
		{"172.16.3.4", false},
		{"192.168.1.10", false},
		{"100.100.100.201", false},
		{"fd00::5", false},
		{"64:ff9b::808:808", false},
		{"8.8.8.8", false},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			if got := refusedAddr(netip.MustParseAddr(tc.addr)) != ""; got != tc.refused {
				t.Errorf("refusedAddr(%s) refused = %v, want %v", tc.addr, got, tc.refused)
			}
		})
	}
}

// The address guard sits in the dialer, so it holds for names, for redirect
// targets and for registries marked insecure alike.
func TestAddressGuard(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	registry := newRecorder(t, nil)
	p := port(registry.URL)
	redirector := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	tr := newTransport(t, Options{
		Resolver: fakeResolver{
			"metadata.test": addrs("169.254.169.254"),
			"rebind.test":   addrs("127.0.0.1", "169.254.169.254"),
			"aws6.test":     addrs("fd00:ec2::254"),
			"registry.test": addrs("127.0.0.1"),
		},
		// Insecure so plain HTTP passes the policy and the dialer decides.
		Registries: []Registry{
			{Host: "metadata.test:" + p, Insecure: true},
			{Host: "rebind.test:" + p, Insecure: true},
			{Host: "aws6.test:" + p, Insecure: true},
			{Host: "registry.test:" + p, Insecure: true},
			{Host: "169.254.169.254", Insecure: true},
			{Host: "100.100.100.200", Insecure: true},
		},
	})
	tests := []struct {
		name    string
		url     string
		wantMsg string // "" means the request succeeds
	}{
		{name: "metadata IP", url: "http://169.254.169.254/latest/meta-data/", wantMsg: "169.254.169.254 is a link-local address"},
		{name: "metadata IP over TLS", url: "https://169.254.169.254/latest/meta-data/", wantMsg: "link-local"},
		{name: "Alibaba metadata", url: "http://100.100.100.200/latest/meta-data/", wantMsg: "cloud metadata"},
		{name: "name resolving to metadata", url: "http://metadata.test:" + p + "/v2/", wantMsg: "metadata.test resolves to 169.254.169.254"},
		{name: "name resolving to AWS IPv6 metadata", url: "http://aws6.test:" + p + "/v2/", wantMsg: "resolves to fd00:ec2::254"},
		{name: "name resolving to loopback and metadata", url: "http://rebind.test:" + p + "/v2/", wantMsg: "resolves to 169.254.169.254"},
		{name: "unspecified address", url: "https://0.0.0.0:" + p + "/v2/", wantMsg: "unspecified"},
		{name: "IPv6 unspecified address", url: "https://[::]:" + p + "/v2/", wantMsg: "unspecified"},
		{name: "redirect to metadata IP", url: redirector.URL + "/v2/?to=http://169.254.169.254/latest/meta-data/", wantMsg: "link-local"},
		{name: "redirect to name resolving to metadata", url: redirector.URL + "/v2/?to=http://metadata.test:" + p + "/v2/", wantMsg: "resolves to 169.254.169.254"},
		{name: "name resolving to loopback is allowed", url: "http://registry.test:" + p + "/v2/"},
		{name: "redirect to loopback name is allowed", url: redirector.URL + "/v2/?to=http://registry.test:" + p + "/v2/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, err := get(ctx, tr, tc.url, nil)
			if tc.wantMsg == "" {
				if err != nil || status != http.StatusOK {
					t.Fatalf("got status %d, err %v; want 200", status, err)
				}
				return
			}
			if !errors.Is(err, ErrNotAllowed) {
				t.Fatalf("got status %d, err %v; want ErrNotAllowed", status, err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
		})
	}
	if n := tr.breakers.open(); n != 0 {
		t.Errorf("refused addresses opened %d circuits", n)
	}
}

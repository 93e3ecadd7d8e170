package transport

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/archfilter/archfilter/internal/fuzzcheck"
)

// FuzzAddressGuard feeds the address guard every address, in every spelling a registry or a
// redirect can give it: an IP literal as host, the same address IPv4-mapped, behind the NAT64
// prefix, with a zone, and as what a name resolves to. The guard must refuse an address in
// one spelling exactly when it refuses it in every other, and each of its three checks
// (the literal host, the resolved name, the dialer's socket hook) must agree with
// refusedAddr. Independently of refusedAddr's code, no spelling of a link-local (cloud
// metadata) or unspecified IPv4 address may ever pass.
func FuzzAddressGuard(f *testing.F) {
	for _, s := range []string{
		"169.254.169.254", "169.254.0.1", "fe80::1", "fd00:ec2::254", "100.100.100.200", "0.0.0.0",
		"0.1.2.3", "::", "224.0.0.1", "ff02::1", "255.255.255.255", "127.0.0.1", "::1", "10.0.0.5",
		"172.16.3.4", "192.168.1.10", "100.100.100.201", "fd00::5", "8.8.8.8",
	} {
		a := netip.MustParseAddr(s).As16()
		f.Add(a[:], "registry.test")
	}
	f.Add([]byte{169, 254, 169, 254}, "169.254.169.254")
	f.Add([]byte{}, "[::ffff:169.254.169.254]")
	f.Add([]byte{}, "0251.0376.0251.0376")
	f.Fuzz(func(t *testing.T, raw []byte, host string) {
		var spellings []netip.Addr
		switch {
		case len(raw) >= 16:
			spellings = append(spellings, netip.AddrFrom16([16]byte(raw[:16])))
		case len(raw) >= 4:
			v4 := netip.AddrFrom4([4]byte(raw[:4]))
			mapped := netip.AddrFrom16(v4.As16())
			nat := nat64.Addr().As16()
			copy(nat[12:], raw[:4])
			spellings = append(spellings, v4, mapped, netip.AddrFrom16(nat))
			// The hard property, stated without refusedAddr: no spelling of a link-local
			// or unspecified IPv4 address passes.
			if v4.IsLinkLocalUnicast() || v4.IsUnspecified() || raw[0] == 0 {
				for _, a := range spellings {
					if refusedAddr(a) == "" {
						t.Fatalf("%s (a spelling of %s) passes the guard", a, v4)
					}
				}
			}
		}
		if len(spellings) > 0 && spellings[0].Is6() && !spellings[0].Is4In6() {
			spellings = append(spellings, spellings[0].WithZone("eth0"))
		}
		for _, a := range spellings {
			if (refusedAddr(a) == "") != (refusedAddr(spellings[0]) == "") {
				t.Fatalf("refusedAddr disagrees between spellings: %s %q, %s %q",
					spellings[0], refusedAddr(spellings[0]), a, refusedAddr(a))
			}
			checkGuardAgrees(t, a)
		}

		// Any host string: a literal is judged as its address, a name as what it resolves
		// to; neither may take the guard out of its bounds.
		g := newGuardedDialer(fakeResolver{host: spellings}, net.Dialer{})
		fuzzcheck.Within(t, "vettedAddrs", fuzzcheck.Limits{Alloc: fuzzcheck.PerInputByte([]byte(host), 16, 64*fuzzcheck.KiB)}, func() {
			_, err := g.vettedAddrs(context.Background(), "tcp", host)
			literal, perr := netip.ParseAddr(host)
			switch {
			case perr == nil && refusedAddr(literal) != "":
				if !errors.Is(err, ErrNotAllowed) {
					t.Fatalf("literal host %q is %s, but vettedAddrs = %v", host, refusedAddr(literal), err)
				}
			case perr == nil:
				if err != nil {
					t.Fatalf("literal host %q may be dialled, but vettedAddrs = %v", host, err)
				}
			}
		})
	})
}

// checkGuardAgrees checks that the name path and the dialer's socket hook judge a as
// refusedAddr does.
func checkGuardAgrees(t *testing.T, a netip.Addr) {
	t.Helper()
	refused := refusedAddr(a) != ""
	g := newGuardedDialer(fakeResolver{"name.test": {netip.MustParseAddr("127.0.0.1"), a}}, net.Dialer{})
	_, err := g.vettedAddrs(context.Background(), "tcp", "name.test")
	if refused != errors.Is(err, ErrNotAllowed) {
		t.Fatalf("a name resolving to %s: vettedAddrs = %v, refusedAddr = %q", a, err, refusedAddr(a))
	}
	err = g.dialer.Control("tcp", net.JoinHostPort(a.String(), "443"), nil)
	if refused != errors.Is(err, ErrNotAllowed) {
		t.Fatalf("the socket hook on %s: %v, refusedAddr = %q", a, err, refusedAddr(a))
	}
}

// FuzzRetryAfter feeds a registry's Retry-After header. A delay is never negative, the
// delay-seconds form means exactly its seconds (capped where time.Duration ends), and an
// accepted HTTP date is the distance to it.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "-1", " 7 ", "", "Wed, 21 Oct 2015 07:28:00 GMT",
		"Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "99999999999999999999", "1e3", "0x10"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		var d time.Duration
		var ok bool
		fuzzcheck.Within(t, "parseRetryAfter", fuzzcheck.Limits{Alloc: fuzzcheck.PerInputByte([]byte(v), 8, 4*fuzzcheck.KiB)}, func() {
			d, ok = parseRetryAfter(v, now)
		})
		if !ok {
			if d != 0 {
				t.Fatalf("parseRetryAfter(%q) = %v, false: a refused header must mean no delay", v, d)
			}
			return
		}
		if d < 0 {
			t.Fatalf("parseRetryAfter(%q) = %v: negative", v, d)
		}
		if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			if secs < int64(1<<63-1)/int64(time.Second) && d != time.Duration(secs)*time.Second {
				t.Fatalf("parseRetryAfter(%q) = %v, want %ds", v, d, secs)
			}
			return
		}
		when, err := time.Parse(time.RFC1123, strings.TrimSpace(v))
		if err == nil && when.After(now) && d != when.Sub(now) {
			t.Fatalf("parseRetryAfter(%q) = %v, want %v", v, d, when.Sub(now))
		}
	})
}

// FuzzHostPolicy feeds allowedRegistries / deniedRegistries globs and registry hosts (the
// globs come from the operator, the hosts from pod authors' image references). A glob
// newHostPolicy accepts never makes check panic; Docker Hub denied by one of its names is
// denied by every other; and a host's own name, denied, refuses it.
func FuzzHostPolicy(f *testing.F) {
	for _, tc := range [][2]string{
		{"*.example.com", "a.example.com"}, {"docker.io", "index.docker.io"}, {"registry.local:5000", "registry.local:5000"},
		{"*.docker.io", "registry-1.docker.io"}, {"[", "x"}, {"Registry.Example.com:443", "registry.example.com"},
		{"*", "localhost"}, {"*.*.io", "a.b.io"},
	} {
		f.Add(tc[0], tc[1])
	}
	f.Fuzz(func(t *testing.T, glob, host string) {
		host = canonicalHost("", host)
		deny, err := newHostPolicy(nil, []string{glob})
		if err != nil {
			return
		}
		fuzzcheck.Within(t, "hostPolicy.check", fuzzcheck.Limits{Alloc: fuzzcheck.PerInputByte([]byte(glob+host), 64, 64*fuzzcheck.KiB)}, func() {
			denied := deny.check(host) != nil
			// Docker Hub's names are one registry when the glob names it: a wildcard
			// ("*.docker.io") matches by labels, and docker.io has one label fewer.
			if dockerHubHosts[host] && dockerHubHosts[canonicalHost("", glob)] {
				for alias := range dockerHubHosts {
					if (deny.check(alias) != nil) != denied {
						t.Fatalf("deniedRegistries [%q]: %s denied = %v, its alias %s denied = %v", glob, host, denied, alias, !denied)
					}
				}
			}
			if allow, err := newHostPolicy([]string{glob}, nil); err == nil && denied && allow.check(host) != nil {
				t.Fatalf("glob %q matches %s when denying, not when allowing", glob, host)
			}
		})
		if host != "" && !strings.ContainsAny(host, "/ ") {
			self, err := newHostPolicy(nil, []string{host})
			if err == nil && self.check(host) == nil {
				t.Fatalf("deniedRegistries [%q] does not refuse %q itself", host, host)
			}
		}
	})
}

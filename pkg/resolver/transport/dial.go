package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
)

// HostResolver looks up a host's addresses; *net.Resolver implements it.
// Tests substitute it to make a name resolve to a refused address.
type HostResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Addresses that are never dialled, whatever the host policy says. Loopback
// and private ranges stay reachable: in-cluster registries live there, and the
// host globs are the tool to refuse them.
var (
	alibabaMetadata = netip.MustParseAddr("100.100.100.200")
	awsMetadataV6   = netip.MustParseAddr("fd00:ec2::254")
	thisNetwork     = netip.MustParsePrefix("0.0.0.0/8") // Linux dials 0.x.y.z as a local address
	nat64           = netip.MustParsePrefix("64:ff9b::/96")
	broadcast       = netip.MustParseAddr("255.255.255.255")
)

// refusedAddr explains why ip may not be dialled, or returns "" when it may.
func refusedAddr(ip netip.Addr) string {
	ip = ip.WithZone("")
	if ip.Is4In6() {
		ip = ip.Unmap()
	}
	if nat64.Contains(ip) {
		// 64:ff9b::a9fe:a9fe reaches 169.254.169.254 through a NAT64 gateway.
		b := ip.As16()
		if why := refusedAddr(netip.AddrFrom4([4]byte(b[12:]))); why != "" {
			return why + " (via NAT64)"
		}
	}
	switch {
	case ip.IsUnspecified() || thisNetwork.Contains(ip):
		return "an unspecified address"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return "a link-local address (cloud metadata services live there)"
	case ip == alibabaMetadata || ip == awsMetadataV6:
		return "a cloud metadata address"
	case ip.IsMulticast() || ip.IsInterfaceLocalMulticast() || ip == broadcast:
		return "a multicast or broadcast address"
	}
	return ""
}

// guardedDialer resolves names itself and dials only the vetted IP addresses,
// so a name cannot be re-resolved (DNS rebinding) to a refused address between
// the check and the connect. The net.Dialer Control hook checks the socket
// address again as a second line of defence.
type guardedDialer struct {
	resolver HostResolver
	dialer   net.Dialer
}

func newGuardedDialer(r HostResolver, d net.Dialer) *guardedDialer {
	if r == nil {
		r = net.DefaultResolver
	}
	d.Control = func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return notAllowed("dialing unparsable address %q", address)
		}
		if why := refusedAddr(ap.Addr()); why != "" {
			return notAllowed("%s is %s", ap.Addr(), why)
		}
		return nil
	}
	return &guardedDialer{resolver: r, dialer: d}
}

func (g *guardedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := g.vettedAddrs(ctx, network, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ip := range ips {
		conn, err := g.dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, fmt.Errorf("dialing %s: %w", addr, errors.Join(errs...))
}

// proxyFor returns an http.Transport.Proxy that asks pick which proxy, if
// any, carries a request. Through a proxy the guard never sees the address
// the proxy connects to, so the destination's addresses are resolved and
// vetted here first, as DialContext would (the proxy's own connection is
// dialled, and vetted, by DialContext). The proxy resolves the name again:
// an egress proxy is expected to enforce its own address policy as well.
func (g *guardedDialer) proxyFor(pick func(*url.URL) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		proxy, err := pick(req.URL)
		if err != nil || proxy == nil {
			return proxy, err
		}
		if _, err := g.vettedAddrs(req.Context(), "tcp", req.URL.Hostname()); err != nil {
			return nil, err
		}
		return proxy, nil
	}
}

// vettedAddrs resolves host and returns its addresses, or an error if any of
// them may not be dialled.
func (g *guardedDialer) vettedAddrs(ctx context.Context, network, host string) ([]netip.Addr, error) {
	var ips []netip.Addr
	if ip, perr := netip.ParseAddr(host); perr == nil {
		ips = []netip.Addr{ip}
	} else {
		var err error
		lookupNet := "ip"
		switch network {
		case "tcp4":
			lookupNet = "ip4"
		case "tcp6":
			lookupNet = "ip6"
		}
		ips, err = g.resolver.LookupNetIP(ctx, lookupNet, host)
		if err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	// One refused address refuses the name: a registry has no business
	// resolving to a metadata endpoint, and skipping it would hide the attempt.
	for _, ip := range ips {
		if why := refusedAddr(ip); why != "" {
			if ip.String() == host {
				return nil, notAllowed("%s is %s", host, why)
			}
			return nil, notAllowed("%s resolves to %s, %s", host, ip, why)
		}
	}
	return ips, nil
}

package transport

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"k8s.io/kubernetes/pkg/credentialprovider"

	"github.com/archfilter/archfilter/pkg/hostglob"
)

// dockerHubHosts are the names Docker Hub is reached by. Images say
// "docker.io", ggcr talks to "index.docker.io", docker pulls from
// "registry-1.docker.io"; a setting written for one must apply to all.
var dockerHubHosts = map[string]bool{
	"docker.io":            true,
	"index.docker.io":      true,
	"registry-1.docker.io": true,
}

// canonicalHost lower-cases host and drops the scheme's default port, so
// "Registry.Example.com:443" and "registry.example.com" are one registry.
func canonicalHost(scheme, host string) string {
	h := strings.ToLower(host)
	switch scheme {
	case "https", "":
		h = strings.TrimSuffix(h, ":443")
	case "http":
		h = strings.TrimSuffix(h, ":80")
	}
	return h
}

// hostPolicy is the allowed/denied registry globs. A glob is matched like
// kubelet credential keys: "*" stands for exactly one DNS label, and the port
// must match ("*.example.com" matches "a.example.com", not "a.b.example.com"
// nor "a.example.com:5000").
type hostPolicy struct {
	allowed, denied []string
}

func newHostPolicy(allowed, denied []string) (hostPolicy, error) {
	var p hostPolicy
	for _, list := range []struct {
		field string
		globs []string
	}{{"allowedRegistries", allowed}, {"deniedRegistries", denied}} {
		for i, g := range list.globs {
			if err := hostglob.Validate(g); err != nil {
				return p, fmt.Errorf("%s[%d]: %q: %w", list.field, i, g, err)
			}
		}
	}
	for _, g := range allowed {
		p.allowed = append(p.allowed, canonicalHost("", g))
	}
	for _, g := range denied {
		p.denied = append(p.denied, canonicalHost("", g))
	}
	return p, nil
}

// check returns nil when host (canonical, see canonicalHost) may be contacted:
// no deny glob matches it, and the allow list is empty or an allow glob does.
func (p hostPolicy) check(host string) error {
	for _, g := range p.denied {
		if globMatches(g, host) {
			return notAllowed("%s matches deniedRegistries entry %q", host, g)
		}
	}
	if len(p.allowed) == 0 {
		return nil
	}
	for _, g := range p.allowed {
		if globMatches(g, host) {
			return nil
		}
	}
	return notAllowed("%s matches no allowedRegistries entry", host)
}

// globMatches applies kubelet's matching, once as written and once with Docker
// Hub's aliases folded together, so "docker.io" in a list covers
// index.docker.io while "*.docker.io" still matches index.docker.io itself.
func globMatches(glob, host string) bool {
	if ok, _ := credentialprovider.URLsMatchStr(glob, host); ok {
		return true
	}
	cg, ch := foldDockerHub(glob), foldDockerHub(host)
	if cg == glob && ch == host {
		return false
	}
	ok, _ := credentialprovider.URLsMatchStr(cg, ch)
	return ok
}

func foldDockerHub(host string) string {
	if dockerHubHosts[host] {
		return "docker.io"
	}
	return host
}

// plainHTTPAllowed says whether credentials and manifests may travel
// unencrypted to host: only when an operator marked it insecure, or when it is
// the loopback interface (containerd makes the same exception).
func (t *Transport) plainHTTPAllowed(host string) bool {
	if t.insecure(host) {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	if name == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.Unmap().IsLoopback()
}

// checkURL applies the host policy and the plain-HTTP rule to one request or
// redirect hop.
func (t *Transport) checkURL(u *url.URL) error {
	host := canonicalHost(u.Scheme, u.Host)
	if host == "" {
		return notAllowed("request URL %q has no host", u.Redacted())
	}
	if err := t.policy.check(host); err != nil {
		return err
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !t.plainHTTPAllowed(host) {
			return notAllowed("plain HTTP to %s: mark the registry insecure to allow it", host)
		}
	default:
		return notAllowed("scheme %q for %s", u.Scheme, host)
	}
	return nil
}

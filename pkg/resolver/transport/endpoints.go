package transport

import "github.com/archfilter/archfilter/pkg/resolver"

// Endpoints lists where to fetch registry's content, in order: its mirrors as
// configured, then registry itself. Each endpoint's Insecure comes from that
// host's own Registry entry, as containerd reads hosts.toml.
func (t *Transport) Endpoints(registry string) []resolver.Endpoint {
	key := canonicalHost("", registry)
	var eps []resolver.Endpoint
	for _, m := range t.registries[key].Mirrors {
		eps = append(eps, resolver.Endpoint{Host: m, Insecure: t.insecure(m)})
	}
	return append(eps, resolver.Endpoint{Host: registry, Insecure: t.insecure(registry)})
}

func (t *Transport) insecure(host string) bool {
	return t.registries[canonicalHost("", host)].Insecure
}

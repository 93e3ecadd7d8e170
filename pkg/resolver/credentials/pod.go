package credentials

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/archfilter/archfilter/pkg/resolver"
)

// PodCredentials are one pod's candidate credentials, in kubelet order. It
// implements resolver.Credentials.
type PodCredentials struct {
	sources   []source // pull secrets and the docker config file, in order
	providers []*provider

	mu       sync.Mutex
	problems []string
}

type source struct {
	name string
	ring keyring
}

var _ resolver.ContextCredentials = &PodCredentials{}

// For returns the credentials for registry ("host[:port]", or
// "host[:port]/repository" for kubelet's path-scoped keys), most specific
// first, each secret material once. It never blocks: a credential provider
// plugin's answer is included only when cached, and a missing one is fetched
// in the background for the next call. Use ForContext where waiting for the
// plugin is acceptable (resolver workers, not the scheduling cycle).
func (c *PodCredentials) For(registry string) []resolver.Credential {
	out, seen := c.fromSources(registry)
	for _, p := range c.providers {
		ring, ok := p.cached(registry)
		if !ok {
			p.prefetch(registry)
			continue
		}
		out = appendNew(out, seen, ring.lookup(registry), p.source())
	}
	return out
}

// ForContext is For, but runs credential provider plugins whose answer is
// not cached, waiting at most until ctx ends or the provider timeout.
func (c *PodCredentials) ForContext(ctx context.Context, registry string) []resolver.Credential {
	out, seen := c.fromSources(registry)
	for _, p := range c.providers {
		ring, err := p.get(ctx, registry)
		if err != nil {
			c.addProblem(err.Error())
			continue
		}
		out = appendNew(out, seen, ring.lookup(registry), p.source())
	}
	return out
}

func (c *PodCredentials) fromSources(registry string) ([]resolver.Credential, map[string]bool) {
	var out []resolver.Credential
	seen := map[string]bool{}
	for _, s := range c.sources {
		out = appendNew(out, seen, s.ring.lookup(registry), s.name)
	}
	return out, seen
}

func appendNew(out []resolver.Credential, seen map[string]bool, es []entry, source string) []resolver.Credential {
	for _, e := range es {
		if seen[e.id] {
			continue
		}
		seen[e.id] = true
		out = append(out, e.credential(source))
	}
	return out
}

// Problems lists what was skipped, for error messages and events:
// "secret default/regcred not found", a secret of the wrong type, a failed
// plugin run. It never contains secret material.
func (c *PodCredentials) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.problems...)
}

func (c *PodCredentials) addProblem(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.problems {
		if q == p {
			return
		}
	}
	c.problems = append(c.problems, p)
}

// String names the sources, never their secrets, so PodCredentials are safe
// to log.
func (c *PodCredentials) String() string {
	names := make([]string, 0, len(c.sources)+len(c.providers))
	for _, s := range c.sources {
		names = append(names, s.name)
	}
	for _, p := range c.providers {
		names = append(names, p.source())
	}
	return fmt.Sprintf("credentials from [%s]", strings.Join(names, ", "))
}

// GoString keeps %#v from printing the fields.
func (c *PodCredentials) GoString() string { return c.String() }

// MarshalLog keeps structured loggers (logr) from printing the fields.
func (c *PodCredentials) MarshalLog() any { return c.String() }

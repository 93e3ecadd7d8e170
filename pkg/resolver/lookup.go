package resolver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// anonymousScope is the credential scope of answers obtained without credentials; anyone
// may read them.
const anonymousScope = "anonymous"

// Lookup returns the cached answer for req. It reads memory only and does not allocate
// when the answer is cached; an invalid reference is answered at once.
//
// A request sees answers obtained anonymously and answers obtained with a credential it
// holds itself (one that req.Credentials yields for the registry or one of its mirrors),
// never one obtained with somebody else's credential.
func (r *Resolver) Lookup(req Request) (Result, bool) {
	ref := r.refs.get(req.Image)
	if ref.err != nil {
		cacheHits.Inc()
		return invalidResult(ref), true
	}
	res, ok := r.lookup(req, ref, r.clock.Now())
	if ok {
		cacheHits.Inc()
	} else {
		cacheMisses.Inc()
	}
	return res, ok
}

func (r *Resolver) lookup(req Request, ref *imageRef, now time.Time) (Result, bool) {
	if res, ok := r.lookupScope(anonymousScope, ref, now); ok {
		return res, true
	}
	if req.Credentials != nil {
		cs := req.Credentials.For(ref.registry)
		for i := range cs {
			if res, ok := r.lookupScope(credentialID(&cs[i]), ref, now); ok {
				return res, true
			}
		}
		if r.opts.Endpoints != nil {
			for _, ep := range r.opts.Endpoints(ref.registry) {
				if ep.Host == ref.registry {
					continue
				}
				cs := req.Credentials.For(ep.Host)
				for i := range cs {
					if res, ok := r.lookupScope(credentialID(&cs[i]), ref, now); ok {
						return res, true
					}
				}
			}
		}
	}
	if e := r.cache.get(cacheKey{negativeEntry, r.failureScope(req, ref), ref.canonical}); e != nil && now.Before(e.expires) {
		return e.result, true
	}
	return Result{}, false
}

// lookupScope returns the fresh answer for ref in one credential scope.
func (r *Resolver) lookupScope(scope string, ref *imageRef, now time.Time) (Result, bool) {
	if ref.digest != "" {
		e := r.cache.get(cacheKey{digestEntry, scope, ref.canonical})
		if e == nil || !now.Before(e.expires) {
			return Result{}, false
		}
		return e.result, true
	}
	t, d := r.cache.getTag(cacheKey{tagEntry, scope, ref.canonical})
	if t == nil || d == nil || !now.Before(t.expires) || !now.Before(d.expires) {
		return Result{}, false
	}
	res := d.result
	if t.expires.Before(res.Expires) {
		res.Expires = t.expires
	}
	return res, true
}

// endpointAndCredential finds the endpoint host and the request's credential with the ID
// scope, to revalidate an answer the way it was obtained.
func (r *Resolver) endpointAndCredential(req Request, ref *imageRef, host, scope string) (Endpoint, *Credential, bool) {
	for _, ep := range r.endpointsFor(ref.registry) {
		if ep.Host != host {
			continue
		}
		if scope == anonymousScope {
			return ep, nil, true
		}
		cands := candidates(req, host)
		for i := range cands {
			if credentialID(&cands[i]) == scope {
				return ep, &cands[i], true
			}
		}
	}
	return Endpoint{}, nil, false
}

// scopesOf lists the credential scopes whose answers req may see: anonymous, then the IDs
// of its credentials for the registry and each mirror.
func (r *Resolver) scopesOf(req Request, ref *imageRef) []string {
	scopes := []string{anonymousScope}
	if req.Credentials == nil {
		return scopes
	}
	for _, ep := range r.endpointsFor(ref.registry) {
		cands := req.Credentials.For(ep.Host)
		for i := range cands {
			scopes = append(scopes, credentialID(&cands[i]))
		}
	}
	return scopes
}

// failureScope is the scope of a request's failures and of its shared flight: the list of
// every candidate credential, per endpoint. A failure depends on all of them (a request
// with one more credential might succeed), and two requests share a fetch only when they
// would try exactly the same credentials.
func (r *Resolver) failureScope(req Request, ref *imageRef) string {
	if req.Credentials == nil {
		return anonymousScope
	}
	var b strings.Builder
	anyCred := false
	for i, ep := range r.endpointsFor(ref.registry) {
		if i > 0 {
			b.WriteByte('|')
		}
		cands := req.Credentials.For(ep.Host)
		for j := range cands {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(credentialID(&cands[j]))
			anyCred = true
		}
	}
	if !anyCred {
		return anonymousScope
	}
	return b.String()
}

func candidates(req Request, host string) []Credential {
	if req.Credentials == nil {
		return nil
	}
	return req.Credentials.For(host)
}

// fetchCandidates is candidates for a worker about to fetch: it may wait for
// slow sources (credential provider plugins), which For must never do.
func fetchCandidates(ctx context.Context, req Request, host string) []Credential {
	if cc, ok := req.Credentials.(ContextCredentials); ok {
		return cc.ForContext(ctx, host)
	}
	return candidates(req, host)
}

// credentialID is the credential's cache scope. Credentials without an ID get one derived
// from their secret material, so that their answers are still never shared.
func credentialID(c *Credential) string {
	if c.ID != "" && c.ID != anonymousScope {
		return c.ID
	}
	h := sha256.New()
	for _, s := range []string{c.Username, c.Password, c.IdentityToken, c.RegistryToken} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "derived:" + hex.EncodeToString(h.Sum(nil))
}

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
//
// Within Cache.StaleWhileRevalidate of its expiry, an expired tag or digest answer is
// still returned, and a revalidation is queued for the workers (the queue merges it with
// any other request for the image): pods go on with what is known while one HEAD
// refreshes it, instead of waiting for it.
func (r *Resolver) Lookup(req Request) (Result, bool) {
	ref := r.refs.get(req.Image)
	if ref.err != nil {
		cacheHits.Inc()
		return invalidResult(ref), true
	}
	res, found := r.lookupOrStale(req, ref, r.clock.Now())
	switch found {
	case fresh:
		cacheHits.Inc()
	case stale:
		cacheHits.Inc()
		staleServed.Inc()
		r.ResolveAsync(req, ignoreResult)
	default:
		cacheMisses.Inc()
	}
	return res, found != missing
}

// ignoreResult is the callback of background revalidations: the cache is what they update.
func ignoreResult(Result) {}

// freshness is what Lookup found.
type freshness uint8

const (
	missing freshness = iota
	fresh
	stale // expired, within Cache.StaleWhileRevalidate
)

// lookupOrStale is lookup, falling back to an answer that expired less than
// Cache.StaleWhileRevalidate ago.
func (r *Resolver) lookupOrStale(req Request, ref *imageRef, now time.Time) (Result, freshness) {
	if res, ok := r.lookup(req, ref, now); ok {
		return res, fresh
	}
	swr := r.opts.Cache.StaleWhileRevalidate
	if swr <= 0 {
		return Result{}, missing
	}
	// An answer is usable until swr after it expired: look it up as of then.
	if res, ok := r.lookup(req, ref, now.Add(-swr)); ok && res.Err == nil {
		return res, stale
	}
	return Result{}, missing
}

func (r *Resolver) lookup(req Request, ref *imageRef, now time.Time) (Result, bool) {
	if res, ok := r.lookupScope(anonymousScope, ref, now); ok {
		return res, true
	}
	var (
		found Result
		hit   bool
	)
	r.forEachCandidate(req, ref, func(_ Endpoint, creds []Credential) bool {
		for i := range creds {
			if found, hit = r.lookupScope(credentialID(&creds[i]), ref, now); hit {
				return false
			}
		}
		return true
	})
	if hit {
		return found, true
	}
	if e := r.cache.get(cacheKey{negativeEntry, r.failureScope(req, ref), ref.canonical}); e != nil && e.fresh(now) {
		return e.result(), true
	}
	return Result{}, false
}

// forEachCandidate calls fn with every endpoint of ref's registry (its mirrors
// in order, then the registry itself) and the credentials req holds for that
// endpoint's host, until fn returns false. It is the one walk over endpoints
// and credentials that lookups, revalidation and failure scopes share.
// Unlike endpointsFor it does not allocate: Lookup uses it on every cycle.
func (r *Resolver) forEachCandidate(req Request, ref *imageRef, fn func(ep Endpoint, creds []Credential) bool) {
	if r.opts.Endpoints != nil {
		if eps := r.opts.Endpoints(ref.registry()); len(eps) > 0 {
			for _, ep := range eps {
				if !fn(ep, candidates(req, ep.Host)) {
					return
				}
			}
			return
		}
	}
	fn(Endpoint{Host: ref.registry()}, candidates(req, ref.registry()))
}

// lookupScope returns the fresh answer for ref in one credential scope.
func (r *Resolver) lookupScope(scope string, ref *imageRef, now time.Time) (Result, bool) {
	if digest := ref.digest(); digest != "" {
		e := r.cache.getDigest(scope, ref.repoName(), digest)
		if e == nil || !e.answerFresh(now) {
			return Result{}, false
		}
		return e.digestResult(), true
	}
	e := r.cache.get(cacheKey{tagEntry, scope, ref.canonical})
	if e == nil || !e.fresh(now) || !e.answerFresh(now) {
		return Result{}, false
	}
	return e.result(), true
}

// endpointAndCredential finds the endpoint host and the request's credential with the ID
// scope, to revalidate an answer the way it was obtained.
func (r *Resolver) endpointAndCredential(req Request, ref *imageRef, host, scope string) (Endpoint, *Credential, bool) {
	var (
		found Endpoint
		cred  *Credential
		ok    bool
	)
	r.forEachCandidate(req, ref, func(ep Endpoint, creds []Credential) bool {
		if ep.Host != host {
			return true
		}
		if scope == anonymousScope {
			found, ok = ep, true
			return false
		}
		for i := range creds {
			if credentialID(&creds[i]) == scope {
				found, cred, ok = ep, &creds[i], true
				return false
			}
		}
		return true
	})
	return found, cred, ok
}

// scopesOf lists the credential scopes whose answers req may see: anonymous, then the IDs
// of its credentials for the registry and each mirror.
func (r *Resolver) scopesOf(req Request, ref *imageRef) []string {
	scopes := []string{anonymousScope}
	r.forEachCandidate(req, ref, func(_ Endpoint, creds []Credential) bool {
		for i := range creds {
			scopes = append(scopes, credentialID(&creds[i]))
		}
		return true
	})
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
	anyCred, first := false, true
	r.forEachCandidate(req, ref, func(_ Endpoint, creds []Credential) bool {
		if !first {
			b.WriteByte('|')
		}
		first = false
		for j := range creds {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(credentialID(&creds[j]))
			anyCred = true
		}
		return true
	})
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

package resolver

import (
	"context"
	"time"

	"github.com/archfilter/archfilter/pkg/platform"
)

// fetch resolves ref on each endpoint in turn, trying each candidate credential on 401 and
// 403, and moving to the next endpoint on any other failure, as the runtime does with
// mirrors. An endpoint other than the last gets at most half of the remaining budget. The
// failure returned is the last one.
func (r *Resolver) fetch(ctx context.Context, req Request, ref *imageRef) Result {
	var last *Error
	eps := r.endpointsFor(ref.registry())
	for i, ep := range eps {
		epCtx, cancel := ctx, context.CancelFunc(func() {})
		if deadline, ok := ctx.Deadline(); ok && i < len(eps)-1 {
			epCtx, cancel = context.WithTimeout(ctx, time.Until(deadline)/2)
		}
		res, err := r.fetchEndpoint(epCtx, req, ref, ep)
		cancel()
		if err == nil {
			return res
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return Result{Err: last}
}

func (r *Resolver) fetchEndpoint(ctx context.Context, req Request, ref *imageRef, ep Endpoint) (Result, *Error) {
	var last *Error
	cands := fetchCandidates(ctx, req, ep.Host)
	for i := 0; i < max(len(cands), 1); i++ {
		var cred *Credential
		if len(cands) > 0 {
			cred = &cands[i]
		}
		res, err := r.fetchFrom(ctx, req, ref, ep, cred)
		if err == nil || err.Reason != ReasonUnauthorized || ctx.Err() != nil {
			return res, err
		}
		last = err
	}
	return Result{}, last
}

func (r *Resolver) fetchFrom(ctx context.Context, req Request, ref *imageRef, ep Endpoint, cred *Credential) (Result, *Error) {
	scope, source := anonymousScope, anonymousScope
	if cred != nil {
		scope, source = credentialID(cred), cred.Source
	}
	s, err := r.session(ctx, ep, ref, scope, cred)
	if err != nil {
		return Result{}, r.newError(ctx, req, ep, source, err)
	}
	digest, set, err := newWalk(ctx, s, &r.opts).image(ctx, ref.identifier())
	if err != nil {
		e := r.newError(ctx, req, ep, source, err)
		if e.Reason == ReasonUnauthorized {
			r.sessions.drop(s)
		}
		return Result{}, e
	}
	return r.store(ref, scope, ep.Host, digest, set), nil
}

// store caches a successful answer in scope and returns it: a tag entry holding the
// digest and its platforms for an image named by tag, a digest entry for one named by
// digest.
func (r *Resolver) store(ref *imageRef, scope, endpoint, digest string, set platform.Set) Result {
	now := r.clock.Now()
	e := &cacheEntry{
		answerExpires: nanos(now.Add(r.opts.Cache.DigestTTL)),
		endpoint:      endpoint,
		platforms:     r.sets.intern(set),
	}
	if ref.digest() != "" {
		// Verified by getManifest; schema1's registry-reported digest must not open a
		// second key that Lookup would never find. The key is the parsed reference's
		// own string, and the digest a slice of it.
		e.key = cacheKey{digestEntry, scope, ref.canonical}
		e.digest = ref.digest()
		e.expires = e.answerExpires
	} else {
		e.key = cacheKey{tagEntry, scope, ref.canonical}
		e.digest = digest
		e.expires = nanos(now.Add(r.opts.Cache.TagTTL))
	}
	r.cache.put(e, now)
	return e.result()
}

func (r *Resolver) session(ctx context.Context, ep Endpoint, ref *imageRef, scope string, cred *Credential) (*session, error) {
	return r.sessions.get(sessionKey{host: ep.Host, repository: ref.repository(), scope: scope}, func() (*session, error) {
		rctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
		defer cancel()
		return newSession(rctx, r.rt, ep, ref.repository(), cred)
	})
}

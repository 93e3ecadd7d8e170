package resolver

import (
	"context"
	"errors"

	"k8s.io/klog/v2"
)

// revalidate refreshes an expired answer held in one of the request's scopes: one HEAD
// says whether the tag still names the same digest (or the digest is still readable). A
// moved tag costs a GET of the new digest. It reports false when there is nothing to
// revalidate or the registry refused; fetch then starts afresh on every endpoint and
// credential, and reports the failure.
func (r *Resolver) revalidate(ctx context.Context, req Request, ref *imageRef) (Result, bool) {
	for _, scope := range r.scopesOf(req, ref) {
		// The entry holding the answer: the tag's, or for a digest, the digest's or a
		// tag's that named it.
		var prev *cacheEntry
		if digest := ref.digest(); digest != "" {
			prev = r.cache.getDigest(scope, ref.repoName(), digest)
		} else {
			prev = r.cache.get(cacheKey{tagEntry, scope, ref.canonical})
		}
		if prev == nil {
			continue
		}
		ep, cred, ok := r.endpointAndCredential(req, ref, prev.endpoint, scope)
		if !ok {
			continue
		}
		s, err := r.session(ctx, ep, ref, scope, cred)
		var digest string
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
			digest, err = s.headManifest(rctx, ref.identifier())
			cancel()
		}
		if err != nil {
			return r.revalidationFailed(ctx, headFailure{req: req, ref: ref, ep: ep, cred: cred, scope: scope, prev: prev, sess: s, err: err})
		}
		if ref.digest() != "" {
			digest = ref.digest()
		}
		if digest == prev.digest {
			return r.store(ref, scope, ep.Host, digest, *prev.platforms), true
		}
		if d := r.cache.getDigest(scope, ref.repoName(), digest); d != nil {
			return r.store(ref, scope, ep.Host, digest, *d.platforms), true
		}
		// The tag moved, or the digest's answer was evicted.
		_, set, err := newWalk(ctx, s, &r.opts).image(ctx, digest)
		if err != nil {
			return Result{}, false
		}
		return r.store(ref, scope, ep.Host, digest, set), true
	}
	return Result{}, false
}

// headFailure is a revalidation HEAD that failed, and what it was tried with.
type headFailure struct {
	req   Request
	ref   *imageRef
	ep    Endpoint
	cred  *Credential // nil: anonymous
	scope string
	prev  *cacheEntry // the answer being revalidated
	sess  *session    // nil when no session could be opened
	err   error
}

// revalidationFailed decides what a failed HEAD means. Refusals (401, 403, 404, policy)
// and registries that do not report digests send the request down the full path. A
// transient failure (unreachable, timeout, rate limit, open circuit) keeps serving the
// previous answer for NegativeTTL, after which the HEAD is tried again: a registry outage
// must not turn every image the cluster already knows into a failure.
func (r *Resolver) revalidationFailed(ctx context.Context, f headFailure) (Result, bool) {
	req, ref, scope, prev := f.req, f.ref, f.scope, f.prev
	source := anonymousScope
	if f.cred != nil {
		source = f.cred.Source
	}
	e := r.newError(ctx, req, f.ep, source, f.err)
	switch {
	case errors.Is(f.err, errNoDigestHeader):
		return Result{}, false
	case e.Reason == ReasonUnauthorized:
		if f.sess != nil {
			r.sessions.drop(f.sess)
		}
		return Result{}, false
	case e.Reason != ReasonUnreachable && e.Reason != ReasonTimeout && e.Reason != ReasonRateLimited && e.Reason != ReasonCircuitOpen:
		return Result{}, false
	}
	klog.FromContext(ctx).V(2).Info("Serving a stale answer while the registry fails", "image", req.Image, "err", e)
	now := r.clock.Now()
	exp := nanos(now.Add(r.opts.Cache.NegativeTTL))
	if ref.tag() == "" && prev.answerFresh(now) {
		return prev.digestResult(), true
	}
	kept := &cacheEntry{
		key:           prev.key,
		expires:       exp,
		answerExpires: max(prev.answerExpires, exp),
		digest:        prev.digest,
		endpoint:      prev.endpoint,
		platforms:     prev.platforms,
	}
	if ref.tag() == "" {
		// prev may be the entry of a tag that named the digest.
		kept.key = cacheKey{digestEntry, scope, ref.canonical}
		kept.answerExpires = exp
	}
	r.cache.put(kept, now)
	return kept.result(), true
}

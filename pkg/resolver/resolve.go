package resolver

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/sync/singleflight"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/version"
)

// Resolver resolves image platforms from registries. It implements Interface.
type Resolver struct {
	opts  Options
	clock clock.PassiveClock
	// rt is Options.Transport, instrumented, under a User-Agent.
	rt       http.RoundTripper
	refs     *refCache
	cache    *cache
	sessions *sessionPool
	// flights makes concurrent resolutions of one image in one credential scope share a
	// fetch, whether they come from Resolve or from the workers.
	flights singleflight.Group
	queue   *workQueue
	running atomic.Bool
}

var _ Interface = (*Resolver)(nil)

// New returns a Resolver. Resolve works at once; ResolveAsync needs Run.
func New(opts Options) (*Resolver, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Resolver{
		opts:     o,
		clock:    o.Clock,
		rt:       transport.NewUserAgent(&instrumentedTransport{next: o.Transport}, "archfilter/"+version.Version),
		refs:     newRefCache(o.Cache.MaxEntries),
		cache:    newCache(o.Cache.MaxEntries, func(n int) { cacheEntries.Set(float64(n)) }),
		sessions: newSessionPool(o.Clock),
		queue:    newWorkQueue(),
	}, nil
}

// Resolve resolves req, sharing the work with concurrent requests for the same image in
// the same credential scope. It returns early, with a Timeout failure, when ctx ends; the
// shared work goes on for the others, within ResolveTimeout.
func (r *Resolver) Resolve(ctx context.Context, req Request) Result {
	ref := r.refs.get(req.Image)
	if ref.err != nil {
		return invalidResult(ref)
	}
	if res, ok := r.lookup(req, ref, r.clock.Now()); ok {
		return res
	}
	return r.shared(ctx, context.WithoutCancel(ctx), req, ref, r.failureScope(req, ref))
}

// shared runs resolve once per (scope, reference) at a time. waitCtx bounds the wait,
// workCtx the work.
func (r *Resolver) shared(waitCtx, workCtx context.Context, req Request, ref *imageRef, scope string) Result {
	ch := r.flights.DoChan(scope+"\x00"+ref.canonical, func() (any, error) {
		return r.resolve(workCtx, req, ref, scope), nil
	})
	select {
	case v := <-ch:
		return v.Val.(Result)
	case <-waitCtx.Done():
		return Result{Err: &Error{
			Image: req.Image, Registry: ref.registry, CredentialSource: anonymousScope,
			Reason: ReasonTimeout, Err: waitCtx.Err(),
		}}
	}
}

// resolve answers req from the network within ResolveTimeout: by revalidating a stale
// answer with one HEAD when it can, by fetching otherwise.
func (r *Resolver) resolve(base context.Context, req Request, ref *imageRef, failScope string) Result {
	// A flight that finished just before this one started may have answered already.
	if res, ok := r.lookup(req, ref, r.clock.Now()); ok {
		return res
	}
	ctx, cancel := context.WithTimeout(base, r.opts.ResolveTimeout)
	defer cancel()
	logger := klog.FromContext(ctx)
	start := time.Now()

	res, ok := r.revalidate(ctx, req, ref)
	if !ok {
		res = r.fetch(ctx, req, ref)
	}
	elapsed := time.Since(start)

	if res.Err == nil {
		resolutionDuration.WithLabelValues("success").Observe(elapsed.Seconds())
		logger.V(4).Info("Resolved image platforms", "image", req.Image, "digest", res.Digest,
			"platforms", res.Platforms.String(), "revalidated", ok, "duration", elapsed)
		return res
	}
	resolutionDuration.WithLabelValues("failure").Observe(elapsed.Seconds())
	failures.WithLabelValues(string(ReasonOf(res.Err))).Inc()
	logger.V(4).Info("Failed to resolve image platforms", "image", req.Image, "err", res.Err, "duration", elapsed)
	if base.Err() != nil {
		// The resolver is stopping: this failure says nothing about the registry.
		return res
	}
	now := r.clock.Now()
	res.Expires = now.Add(r.opts.Cache.NegativeTTL)
	r.cache.put(&cacheEntry{key: cacheKey{negativeEntry, failScope, ref.canonical}, expires: res.Expires, result: res}, now)
	return res
}

// fetch resolves ref on each endpoint in turn, trying each candidate credential on 401 and
// 403, and moving to the next endpoint on any other failure, as the runtime does with
// mirrors. An endpoint other than the last gets at most half of the remaining budget. The
// failure returned is the last one.
func (r *Resolver) fetch(ctx context.Context, req Request, ref *imageRef) Result {
	var last *Error
	eps := r.endpointsFor(ref.registry)
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
	digest, set, err := newWalk(s, &r.opts).image(ctx, ref.identifier())
	if err != nil {
		e := r.newError(ctx, req, ep, source, err)
		if e.Reason == ReasonUnauthorized {
			r.sessions.drop(s)
		}
		return Result{}, e
	}
	return r.store(ref, scope, ep.Host, digest, set), nil
}

// revalidate refreshes an expired answer held in one of the request's scopes: one HEAD
// says whether the tag still names the same digest (or the digest is still readable). A
// moved tag costs a GET of the new digest. It reports false when there is nothing to
// revalidate or the registry refused; fetch then starts afresh on every endpoint and
// credential, and reports the failure.
func (r *Resolver) revalidate(ctx context.Context, req Request, ref *imageRef) (Result, bool) {
	for _, scope := range r.scopesOf(req, ref) {
		var prev *cacheEntry
		if ref.digest != "" {
			prev = r.cache.get(cacheKey{digestEntry, scope, ref.canonical})
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
			return r.revalidationFailed(ctx, req, ref, ep, cred, scope, prev, s, err)
		}
		if ref.digest != "" {
			digest = ref.digest
		}
		if d := r.cache.get(cacheKey{digestEntry, scope, ref.digestName(digest)}); d != nil {
			return r.store(ref, scope, ep.Host, digest, d.result.Platforms), true
		}
		// The tag moved, or the digest's answer was evicted.
		_, set, err := newWalk(s, &r.opts).image(ctx, digest)
		if err != nil {
			return Result{}, false
		}
		return r.store(ref, scope, ep.Host, digest, set), true
	}
	return Result{}, false
}

// revalidationFailed decides what a failed HEAD means. Refusals (401, 403, 404, policy)
// and registries that do not report digests send the request down the full path. A
// transient failure (unreachable, timeout, rate limit, open circuit) keeps serving the
// previous answer for NegativeTTL, after which the HEAD is tried again: a registry outage
// must not turn every image the cluster already knows into a failure.
func (r *Resolver) revalidationFailed(ctx context.Context, req Request, ref *imageRef, ep Endpoint, cred *Credential,
	scope string, prev *cacheEntry, s *session, err error) (Result, bool) {
	source := anonymousScope
	if cred != nil {
		source = cred.Source
	}
	e := r.newError(ctx, req, ep, source, err)
	switch {
	case errors.Is(err, errNoDigestHeader):
		return Result{}, false
	case e.Reason == ReasonUnauthorized:
		if s != nil {
			r.sessions.drop(s)
		}
		return Result{}, false
	case e.Reason != ReasonUnreachable && e.Reason != ReasonTimeout && e.Reason != ReasonRateLimited && e.Reason != ReasonCircuitOpen:
		return Result{}, false
	}
	digest := ref.digest
	if digest == "" {
		digest = prev.digest
	}
	d := r.cache.get(cacheKey{digestEntry, scope, ref.digestName(digest)})
	if d == nil {
		return Result{Err: e}, true
	}
	klog.FromContext(ctx).V(2).Info("Serving a stale answer while the registry fails", "image", req.Image, "err", e)
	now := r.clock.Now()
	exp := now.Add(r.opts.Cache.NegativeTTL)
	res := d.result
	if !now.Before(d.expires) {
		res.Expires = exp
		r.cache.put(&cacheEntry{key: d.key, expires: exp, endpoint: d.endpoint, result: res}, now)
	}
	if ref.tag != "" {
		r.cache.put(&cacheEntry{key: prev.key, expires: exp, digest: digest, digestRef: ref.digestName(digest), endpoint: prev.endpoint}, now)
		res.Expires = exp
	}
	return res, true
}

// store caches a successful answer in scope and returns it.
func (r *Resolver) store(ref *imageRef, scope, endpoint, digest string, set platform.Set) Result {
	if ref.digest != "" {
		// Verified by getManifest; schema1's registry-reported digest must not open a
		// second key that Lookup would never find.
		digest = ref.digest
	}
	now := r.clock.Now()
	res := Result{Platforms: set, Digest: digest, Expires: now.Add(r.opts.Cache.DigestTTL)}
	digestRef := ref.digestName(digest)
	r.cache.put(&cacheEntry{
		key:      cacheKey{digestEntry, scope, digestRef},
		expires:  res.Expires,
		endpoint: endpoint,
		result:   res,
	}, now)
	if ref.tag != "" {
		t := &cacheEntry{
			key:       cacheKey{tagEntry, scope, ref.canonical},
			expires:   now.Add(r.opts.Cache.TagTTL),
			digest:    digest,
			digestRef: digestRef,
			endpoint:  endpoint,
		}
		r.cache.put(t, now)
		if t.expires.Before(res.Expires) {
			res.Expires = t.expires
		}
	}
	return res
}

func (r *Resolver) session(ctx context.Context, ep Endpoint, ref *imageRef, scope string, cred *Credential) (*session, error) {
	return r.sessions.get(sessionKey{host: ep.Host, repository: ref.repository, scope: scope}, func() (*session, error) {
		rctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
		defer cancel()
		return newSession(rctx, r.rt, ep, ref.repository, cred)
	})
}

func (r *Resolver) newError(ctx context.Context, req Request, ep Endpoint, source string, err error) *Error {
	reason, status := classify(err, ctx.Err())
	return &Error{
		Image:            req.Image,
		Registry:         ep.Host,
		CredentialSource: source,
		StatusCode:       status,
		Reason:           reason,
		Err:              err,
	}
}

// endpointsFor returns where to fetch registry's content: mirrors, then the registry.
func (r *Resolver) endpointsFor(registry string) []Endpoint {
	if r.opts.Endpoints != nil {
		if eps := r.opts.Endpoints(registry); len(eps) > 0 {
			return eps
		}
	}
	return []Endpoint{{Host: registry}}
}

func invalidResult(ref *imageRef) Result {
	return Result{Err: ref.invalid}
}

// Package resolver answers "which platforms can run this image?" from registry
// manifests: it parses references, fetches indexes, manifests and configs with
// the pod's credentials, caches answers, and does all of it off the scheduling
// path on a bounded worker pool.
package resolver

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/archfilter/archfilter/pkg/version"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/sync/singleflight"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Interface is what the scheduler plugin uses; *Resolver implements it. Lookup
// and ResolveAsync never block on I/O.
type Interface interface {
	// Lookup returns the cached answer for req, if any (including a cached
	// failure). It only reads memory.
	Lookup(req Request) (Result, bool)
	// ResolveAsync schedules resolution of req on the worker pool and returns
	// at once. done is called exactly once, from a worker goroutine, with the
	// result (also stored in the cache). Concurrent requests for the same image
	// and credential scope share one fetch.
	ResolveAsync(req Request, done func(Result))
	// Resolve resolves req and waits for the answer (for tools and tests).
	Resolve(ctx context.Context, req Request) Result
}

// Resolver resolves image platforms from registries. It implements Interface.
type Resolver struct {
	opts  Options
	clock clock.PassiveClock
	// rt is Options.Transport, instrumented, under a User-Agent.
	rt       http.RoundTripper
	refs     *refCache
	cache    *cache
	sets     *setInterner
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
		sets:     newSetInterner(),
		cache:    newCache(o.Cache.MaxEntries, func(delta int) { cacheEntries.Add(float64(delta)) }),
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
			Image: req.Image, Registry: ref.registry(), CredentialSource: anonymousScope,
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
	e, ok := res.Err.(*Error)
	if !ok {
		// Every failure is an *Error; one that is not is not cached.
		return res
	}
	r.cache.put(&cacheEntry{key: cacheKey{negativeEntry, failScope, ref.canonical}, expires: nanos(res.Expires), err: e}, now)
	return res
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

package resolver

import (
	"context"
	"sync"

	"k8s.io/klog/v2"
)

// task is one image, in one credential scope, waiting for a worker. Every ResolveAsync
// for it while it waits or runs adds its callback here instead of queueing again.
type task struct {
	req   Request
	ref   *imageRef
	scope string
	key   string
	dones []func(Result)
}

// workQueue holds tasks for the workers.
//
// It never blocks ResolveAsync, which the plugin calls from PreEnqueue under the
// scheduling queue's lock, and never drops a task, since each callback is owed a call.
// Instead of a fixed bound with a spill path it is coalescing: requests for an image
// already pending join its task, so the queue holds at most one task per distinct image
// and credential scope among the pods waiting, a bound set by the cluster rather than by
// a constant, and a burst of pods sharing an image costs one queue slot. The workers bound
// concurrency towards registries; pending_resolutions shows the depth.
type workQueue struct {
	mu      sync.Mutex
	pending map[string]*task
	items   []*task
	head    int
	stopped bool
	// wake has room for one signal; a worker that takes a task passes the signal on when
	// more are waiting, so idle workers wake one after another.
	wake chan struct{}
}

func newWorkQueue() *workQueue {
	return &workQueue{pending: make(map[string]*task), wake: make(chan struct{}, 1)}
}

// add queues req unless a task for key is pending, in which case done joins it. It returns
// false when the queue has stopped.
func (q *workQueue) add(key string, req Request, ref *imageRef, scope string, done func(Result)) bool {
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		return false
	}
	if t, ok := q.pending[key]; ok {
		t.dones = append(t.dones, done)
		q.mu.Unlock()
		return true
	}
	t := &task{req: req, ref: ref, scope: scope, key: key, dones: []func(Result){done}}
	q.pending[key] = t
	q.items = append(q.items, t)
	q.mu.Unlock()
	// Every Resolver (one per profile that enables ArchFilter) adds its own:
	// the gauge is the process's total.
	pending.Inc()
	q.signal()
	return true
}

func (q *workQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop returns the oldest queued task, or nil.
func (q *workQueue) pop() *task {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return nil
	}
	t := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else {
		q.signal()
	}
	return t
}

// finish removes t from the pending set and returns the callbacks to call. Later
// ResolveAsync calls start a new task, which will find the answer in the cache.
func (q *workQueue) finish(t *task) []func(Result) {
	q.mu.Lock()
	held := q.pending[t.key] == t
	if held {
		delete(q.pending, t.key)
	}
	dones := t.dones
	q.mu.Unlock()
	if held {
		pending.Dec()
	}
	return dones
}

// stop refuses new tasks and returns those still queued.
func (q *workQueue) stop() []*task {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
	left := q.items[q.head:]
	q.items, q.head = nil, 0
	for _, t := range left {
		delete(q.pending, t.key)
	}
	pending.Add(-float64(len(left)))
	return left
}

// ResolveAsync queues req for the workers and returns at once. done is called exactly
// once, on a worker goroutine, never on the caller's, even when the answer is already
// cached or the reference is invalid: the caller may hold locks that done needs.
// Requests for the same image and credential scope that arrive while one is pending share
// its resolution. After Run returns, done is called on a new goroutine with a Timeout
// failure wrapping ErrStopped.
func (r *Resolver) ResolveAsync(req Request, done func(Result)) {
	ref := r.refs.get(req.Image)
	scope := anonymousScope
	if ref.err == nil {
		scope = r.failureScope(req, ref)
	}
	key := scope + "\x00" + ref.canonical
	if ref.err != nil {
		key = "\x00invalid\x00" + req.Image
	}
	if !r.queue.add(key, req, ref, scope, done) {
		go done(stoppedResult(req, ref))
	}
}

// Run starts Options.Workers workers and blocks until ctx is done and they have returned.
// Resolutions in progress are cancelled; callbacks of queued requests are then called with
// a Timeout failure wrapping ErrStopped, and the transport's idle connections are closed,
// so that no connection to a registry outlives the resolver. Run may be called once.
func (r *Resolver) Run(ctx context.Context) {
	if !r.running.CompareAndSwap(false, true) {
		klog.FromContext(ctx).Error(nil, "Resolver.Run called more than once; ignoring")
		return
	}
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Starting image platform resolver", "workers", r.opts.Workers)
	var wg sync.WaitGroup
	for range r.opts.Workers {
		wg.Go(func() { r.worker(ctx) })
	}
	<-ctx.Done()
	wg.Wait()
	// net/http lets a dial finish after its request was cancelled and pools the
	// connection; closing idle connections also closes those that become idle later.
	if c, ok := r.opts.Transport.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	left := r.queue.stop()
	for _, t := range left {
		res := stoppedResult(t.req, t.ref)
		for _, done := range t.dones {
			done(res)
		}
	}
	logger.V(2).Info("Stopped image platform resolver", "abandoned", len(left))
}

func (r *Resolver) worker(ctx context.Context) {
	for ctx.Err() == nil {
		t := r.queue.pop()
		if t == nil {
			select {
			case <-ctx.Done():
				return
			case <-r.queue.wake:
				continue
			}
		}
		res := r.runTask(ctx, t)
		for _, done := range r.queue.finish(t) {
			done(res)
		}
	}
}

func (r *Resolver) runTask(ctx context.Context, t *task) Result {
	if t.ref.err != nil {
		return invalidResult(t.ref)
	}
	if res, ok := r.lookup(t.req, t.ref, r.clock.Now()); ok {
		return res
	}
	return r.shared(ctx, ctx, t.req, t.ref, t.scope)
}

func stoppedResult(req Request, ref *imageRef) Result {
	if ref.err != nil {
		return invalidResult(ref)
	}
	return Result{Err: &Error{Image: req.Image, Registry: ref.registry(), CredentialSource: anonymousScope,
		Reason: ReasonTimeout, Err: ErrStopped}}
}

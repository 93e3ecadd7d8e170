package resolver

import (
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// calls counts the calls of a set of ResolveAsync callbacks.
type calls struct {
	mu      sync.Mutex
	count   map[int]int
	results map[int]Result
	total   atomic.Int32
}

func newCalls() *calls {
	return &calls{count: map[int]int{}, results: map[int]Result{}}
}

func (c *calls) done(id int) func(Result) {
	return func(res Result) {
		c.mu.Lock()
		c.count[id]++
		c.results[id] = res
		c.mu.Unlock()
		c.total.Add(1)
	}
}

// exactlyOnce fails unless ids 0..n-1 were each called once.
func (c *calls) exactlyOnce(t *testing.T, n int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range n {
		if c.count[id] != 1 {
			t.Errorf("callback %d called %d times, want 1", id, c.count[id])
		}
	}
	if len(c.count) != n {
		t.Errorf("%d callbacks called, want %d", len(c.count), n)
	}
}

func TestResolveAsync(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)
	img := f.Index("app:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	r := newTestResolver(t, Options{Workers: 4})
	startRun(t, r)

	req := Request{Image: img.Ref}
	if _, found := r.Lookup(req); found {
		t.Fatal("Lookup before resolution found an answer")
	}
	c := newCalls()
	const n = 50
	for i := range n {
		r.ResolveAsync(req, c.done(i))
	}
	r.ResolveAsync(Request{Image: "Not A Reference"}, c.done(n))
	poll(t, "every callback", func() bool { return c.total.Load() == n+1 })
	c.exactlyOnce(t, n+1)

	for i := range n {
		if diff := cmp.Diff(ok("linux/amd64", "linux/arm64"), outcomeOf(c.results[i])); diff != "" {
			t.Fatalf("callback %d (-want,+got):\n%s", i, diff)
		}
	}
	if got := ReasonOf(c.results[n].Err); got != ReasonInvalidReference {
		t.Errorf("invalid reference: reason %q, want InvalidReference", got)
	}
	got, found := r.Lookup(req)
	if !found {
		t.Fatal("Lookup after done: not found")
	}
	if diff := cmp.Diff(ok("linux/amd64", "linux/arm64"), outcomeOf(got)); diff != "" {
		t.Errorf("Lookup (-want,+got):\n%s", diff)
	}
	if n := m.Requests.Count(http.MethodGet, "/v2/app/manifests/"); n != 1 {
		t.Errorf("%d manifest GETs, want 1", n)
	}
}

// TestResolveAsyncNeverBlocks fills the only worker and checks that callers are not held
// up, nothing is dropped, and duplicates share one fetch.
func TestResolveAsyncNeverBlocks(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)
	const distinct = 20
	var refs []string
	for i := range distinct {
		refs = append(refs, f.Index(fmt.Sprintf("app%d:v1", i), registrytest.OCI, "linux/amd64").Ref)
	}
	m.Requests.Reset()
	release := make(chan struct{})
	var held atomic.Int32
	m.AddFault(registrytest.Fault{Path: "/v2/app0/manifests/", Wait: release, Matched: func(*http.Request) { held.Add(1) }})

	r := newTestResolver(t, Options{Workers: 1})
	startRun(t, r)
	c := newCalls()
	r.ResolveAsync(Request{Image: refs[0]}, c.done(0))
	poll(t, "the worker to be busy", func() bool { return held.Load() == 1 })

	// The worker is stuck; every call below must return at once.
	id := 1
	for range 5 {
		for _, ref := range refs {
			r.ResolveAsync(Request{Image: ref}, c.done(id))
			id++
		}
	}
	if got := c.total.Load(); got != 0 {
		t.Fatalf("%d callbacks ran while the only worker was busy", got)
	}
	close(release)
	poll(t, "every callback", func() bool { return int(c.total.Load()) == id })
	c.exactlyOnce(t, id)
	for i, res := range c.results {
		if res.Err != nil {
			t.Errorf("callback %d: %v", i, res.Err)
		}
	}
	for _, ref := range refs {
		path := "/v2/" + strings.TrimSuffix(relative(m.Host(), ref), ":v1") + "/manifests/"
		if n := m.Requests.Count(http.MethodGet, path); n != 1 {
			t.Errorf("%s: %d manifest GETs, want 1", ref, n)
		}
	}
}

func TestRunStops(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)
	img := f.Index("app:v1", registrytest.OCI, "linux/amd64")
	slow := f.Index("slow:v1", registrytest.OCI, "linux/amd64")
	release := make(chan struct{})
	defer close(release)
	var held atomic.Int32
	m.AddFault(registrytest.Fault{Path: "/v2/slow/manifests/", Wait: release, Matched: func(*http.Request) { held.Add(1) }})

	r := newTestResolver(t, Options{Workers: 1})
	_, stop := startRun(t, r)

	c := newCalls()
	r.ResolveAsync(Request{Image: slow.Ref}, c.done(0)) // holds the only worker
	poll(t, "the worker to be busy", func() bool { return held.Load() == 1 })
	r.ResolveAsync(Request{Image: img.Ref}, c.done(1)) // stays queued
	poll(t, "worker goroutines", func() bool { return workerGoroutines() == 1 })

	stop()
	if n := workerGoroutines(); n != 0 {
		t.Errorf("%d worker goroutines left after Run returned", n)
	}
	// The running resolution was cancelled; the queued one was abandoned. Both callbacks
	// were called once, with Timeout.
	c.exactlyOnce(t, 2)
	for i, res := range c.results {
		if ReasonOf(res.Err) != ReasonTimeout {
			t.Errorf("callback %d: %v, want Timeout", i, res.Err)
		}
	}
	if !errors.Is(c.results[1].Err, ErrStopped) {
		t.Errorf("abandoned request: %v, want ErrStopped", c.results[1].Err)
	}
	// A stopped resolver still answers every callback.
	r.ResolveAsync(Request{Image: img.Ref}, c.done(2))
	poll(t, "the callback after stop", func() bool { return c.total.Load() == 3 })
	c.exactlyOnce(t, 3)
	if !errors.Is(c.results[2].Err, ErrStopped) {
		t.Errorf("after stop: %v, want ErrStopped", c.results[2].Err)
	}
	// The cancellation was not cached as the image's answer.
	if res, found := r.Lookup(Request{Image: slow.Ref}); found {
		t.Errorf("Lookup after shutdown found %v", res)
	}
}

// idleCloser is a transport that counts calls of CloseIdleConnections.
type idleCloser struct {
	*http.Transport
	calls atomic.Int32
}

func (c *idleCloser) CloseIdleConnections() {
	c.calls.Add(1)
	c.Transport.CloseIdleConnections()
}

// A pooled connection would outlive the resolver (and a scheduler that embeds it: its
// readLoop goroutine and the registry's side of the connection) until the registry
// drops it.
func TestRunClosesIdleConnections(t *testing.T) {
	m := registrytest.NewMemory(t)
	img := m.Fixtures(t).Index("app:v1", registrytest.OCI, "linux/amd64")
	tr := &idleCloser{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	r := newTestResolver(t, Options{Workers: 1, Transport: tr})
	_, stop := startRun(t, r)

	c := newCalls()
	r.ResolveAsync(Request{Image: img.Ref}, c.done(0))
	poll(t, "the resolution", func() bool { return c.total.Load() == 1 })
	if err := c.results[0].Err; err != nil {
		t.Fatalf("resolving %s: %v", img.Ref, err)
	}
	if n := tr.calls.Load(); n != 0 {
		t.Errorf("CloseIdleConnections called %d times while running, want 0", n)
	}
	stop()
	if n := tr.calls.Load(); n != 1 {
		t.Errorf("CloseIdleConnections called %d times after Run returned, want 1", n)
	}
}

// workerGoroutines counts goroutines running Resolver.worker.
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "resolver.(*Resolver).worker(")
}

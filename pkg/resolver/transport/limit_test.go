package transport

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"
)

// pollUntil fails the test when cond does not hold within a few seconds.
func pollUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestConcurrencyCap(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	const limit, requests = 2, 6
	var inFlight, maxInFlight atomic.Int32
	gate := make(chan struct{})
	s := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		<-gate
		inFlight.Add(-1)
	})
	tr := newTransport(t, Options{MaxConcurrentPerRegistry: limit})

	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := get(ctx, tr, s.URL+"/v2/", nil); err != nil {
				errs <- err
			}
		}()
	}
	// Every request is either at the server or queued for a slot.
	pollUntil(t, ctx, "requests to queue", func() bool {
		return inFlight.Load() == limit && tr.limits.waiters(s.host()) == requests-limit
	})
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := maxInFlight.Load(); got != limit {
		t.Errorf("server saw %d concurrent requests, want %d", got, limit)
	}
	if got := s.requests(); got != requests {
		t.Errorf("server got %d requests, want %d", got, requests)
	}
	if n := len(tr.limits.hosts); n != 0 {
		t.Errorf("%d idle hosts still tracked", n)
	}
}

// A request waiting for a slot gives up with its context.
func TestConcurrencyCapRespectsContext(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	gate := make(chan struct{})
	s := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { <-gate })
	defer close(gate)
	tr := newTransport(t, Options{MaxConcurrentPerRegistry: 1})
	go func() { _, _ = get(ctx, tr, s.URL+"/v2/", nil) }()
	pollUntil(t, ctx, "the first request to arrive", func() bool { return s.requests() == 1 })

	waitCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		_, err := get(waitCtx, tr, s.URL+"/v2/", nil)
		done <- err
	}()
	pollUntil(t, ctx, "the second request to queue", func() bool { return tr.limits.waiters(s.host()) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if got := tr.limits.waiters(s.host()); got != 0 {
		t.Errorf("%d waiters left", got)
	}
	if got := s.requests(); got != 1 {
		t.Errorf("server got %d requests, want 1", got)
	}
}

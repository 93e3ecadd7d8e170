package transport

import (
	"context"
	"io"
	"sync"
)

// hostLimits caps concurrent requests per registry host. Entries exist only
// while someone holds or waits for a slot, so the table stays as small as the
// set of hosts in use.
type hostLimits struct {
	max int

	mu    sync.Mutex
	hosts map[string]*hostSlots
}

type hostSlots struct {
	slots   chan struct{}
	users   int // holders and waiters
	waiting int // waiters only (for tests)
}

func newHostLimits(max int) *hostLimits {
	return &hostLimits{max: max, hosts: map[string]*hostSlots{}}
}

// acquire waits for a slot for host, or for ctx to end. release must be
// called exactly once when the exchange is over (response body closed).
func (l *hostLimits) acquire(ctx context.Context, host string) (release func(), err error) {
	l.mu.Lock()
	h := l.hosts[host]
	if h == nil {
		h = &hostSlots{slots: make(chan struct{}, l.max)}
		l.hosts[host] = h
	}
	h.users++
	l.mu.Unlock()

	select {
	case h.slots <- struct{}{}:
	default:
		l.mu.Lock()
		h.waiting++
		l.mu.Unlock()
		select {
		case h.slots <- struct{}{}:
			l.mu.Lock()
			h.waiting--
			l.mu.Unlock()
		case <-ctx.Done():
			l.mu.Lock()
			h.waiting--
			l.leaveLocked(host, h)
			l.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-h.slots
			l.mu.Lock()
			l.leaveLocked(host, h)
			l.mu.Unlock()
		})
	}, nil
}

func (l *hostLimits) leaveLocked(host string, h *hostSlots) {
	h.users--
	if h.users == 0 {
		delete(l.hosts, host)
	}
}

// waiters returns how many requests wait for a slot for host (for tests).
func (l *hostLimits) waiters(host string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.hosts[host]; h != nil {
		return h.waiting
	}
	return 0
}

// releasingBody gives the slot back when the caller is done with the body:
// on Close, or on reaching EOF for callers that read to the end and forget to
// close.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.release()
	}
	return n, err
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

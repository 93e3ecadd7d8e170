package transport

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// maxTrackedBreakers bounds the breaker table: pod authors choose registry
// hosts, so the set of failing hosts is theirs to grow.
const maxTrackedBreakers = 4096

type breakerState int

const (
	breakerClosed breakerState = iota
	breakerOpen
	breakerHalfOpen
)

// outcome is what one exchange tells the breaker about a registry's health.
type outcome int

const (
	// outcomeSuccess: the registry answered (any status below 500, 404 and 401
	// included: those are answers, not outages).
	outcomeSuccess outcome = iota
	// outcomeFailure: 5xx, connection errors, timeouts.
	outcomeFailure
	// outcomeNeutral: says nothing about the registry (caller cancelled, the
	// policy refused the address).
	outcomeNeutral
)

type breaker struct {
	state    breakerState
	failures int
	openedAt time.Time
	probing  bool // half-open: the single probe is in flight
}

// breakers is one circuit breaker per registry host: closed until
// threshold consecutive failures, then open (requests fail at once) for
// openFor, then half-open (one probe; its success closes the circuit, its
// failure opens it again).
type breakers struct {
	clock     clock.PassiveClock
	threshold int
	openFor   time.Duration

	mu        sync.Mutex
	hosts     map[string]*breaker
	lastSweep time.Time
}

func newBreakers(c clock.PassiveClock, threshold int, openFor time.Duration) *breakers {
	return &breakers{clock: c, threshold: threshold, openFor: openFor, hosts: map[string]*breaker{}}
}

// allow reports whether a request to host may be sent. When it may, done must
// be called with the exchange's outcome.
func (bs *breakers) allow(host string) (done func(outcome), err error) {
	if bs.threshold <= 0 {
		return func(outcome) {}, nil
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.sweepLocked()
	b := bs.hosts[host]
	if b == nil {
		return func(o outcome) { bs.record(host, nil, false, o) }, nil
	}
	switch b.state {
	case breakerOpen:
		retryAt := b.openedAt.Add(bs.openFor)
		if bs.clock.Now().Before(retryAt) {
			return nil, &CircuitOpenError{Host: host, RetryAt: retryAt}
		}
		b.state = breakerHalfOpen
		fallthrough
	case breakerHalfOpen:
		if b.probing {
			return nil, &CircuitOpenError{Host: host, RetryAt: bs.clock.Now()}
		}
		b.probing = true
		return func(o outcome) { bs.record(host, b, true, o) }, nil
	}
	return func(o outcome) { bs.record(host, b, false, o) }, nil
}

func (bs *breakers) record(host string, b *breaker, probe bool, o outcome) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b == nil {
		if o != outcomeFailure {
			return // healthy hosts are not tracked
		}
		if b = bs.hosts[host]; b == nil {
			if len(bs.hosts) >= maxTrackedBreakers && !bs.evictLocked() {
				return // table full of open circuits: stop tracking new hosts
			}
			b = &breaker{}
			bs.hosts[host] = b
		}
	}
	if bs.hosts[host] != b {
		return // evicted while the request was in flight
	}
	if probe {
		b.probing = false
	}
	switch o {
	case outcomeNeutral:
	case outcomeSuccess:
		if b.state != breakerClosed {
			openCircuits.Dec()
		}
		delete(bs.hosts, host)
	case outcomeFailure:
		switch b.state {
		case breakerClosed:
			b.failures++
			if b.failures >= bs.threshold {
				b.state = breakerOpen
				b.openedAt = bs.clock.Now()
				openCircuits.Inc()
			}
		case breakerHalfOpen:
			b.state = breakerOpen
			b.openedAt = bs.clock.Now()
		case breakerOpen:
			// a request admitted before the circuit opened; nothing new to learn
		}
	}
}

// evictLocked forgets closed circuits (a few failures, no verdict yet) and
// reports whether that made room.
func (bs *breakers) evictLocked() bool {
	for h, b := range bs.hosts {
		if b.state == breakerClosed {
			delete(bs.hosts, h)
		}
	}
	return len(bs.hosts) < maxTrackedBreakers
}

// sweepLocked forgets circuits nobody has probed for ten open periods, so the
// open-circuits gauge does not count hosts that are no longer used.
func (bs *breakers) sweepLocked() {
	now := bs.clock.Now()
	if now.Sub(bs.lastSweep) < bs.openFor {
		return
	}
	bs.lastSweep = now
	for h, b := range bs.hosts {
		if b.state != breakerClosed && !b.probing && now.Sub(b.openedAt) > 10*bs.openFor {
			delete(bs.hosts, h)
			openCircuits.Dec()
		}
	}
}

// open counts circuits that are not closed (for tests).
func (bs *breakers) open() int {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	n := 0
	for _, b := range bs.hosts {
		if b.state != breakerClosed {
			n++
		}
	}
	return n
}

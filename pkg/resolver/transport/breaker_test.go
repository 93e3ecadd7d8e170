package transport

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

func openCircuitsGauge(t *testing.T) float64 {
	t.Helper()
	v, err := testutil.GetGaugeMetricValue(openCircuits)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestBreaker(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var status atomic.Int32
	status.Store(http.StatusServiceUnavailable)
	s := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) })
	clk := clocktesting.NewFakeClock(time.Now())
	tr := newTransport(t, Options{Breaker: Breaker{FailureThreshold: 3, OpenFor: time.Minute}, Clock: clk})
	gauge := openCircuitsGauge(t)

	send := func() (int, error) { return get(ctx, tr, s.URL+"/v2/", nil) }
	wantStatus := func(want int) {
		t.Helper()
		if got, err := send(); err != nil || got != want {
			t.Fatalf("got %d, %v; want %d", got, err, want)
		}
	}
	wantOpen := func() {
		t.Helper()
		before := s.requests()
		_, err := send()
		var coe *CircuitOpenError
		if !errors.Is(err, ErrCircuitOpen) || !errors.As(err, &coe) {
			t.Fatalf("got %v, want ErrCircuitOpen", err)
		}
		if s.requests() != before {
			t.Fatal("an open circuit let a request through")
		}
	}

	for range 3 {
		wantStatus(http.StatusServiceUnavailable)
	}
	wantOpen()
	if got := openCircuitsGauge(t) - gauge; got != 1 {
		t.Errorf("open circuits gauge rose by %v, want 1", got)
	}

	clk.Step(59 * time.Second)
	wantOpen()
	clk.Step(time.Second)
	wantStatus(http.StatusServiceUnavailable) // the half-open probe fails…
	wantOpen()                                // …and the circuit opens again

	clk.Step(time.Minute)
	status.Store(http.StatusNotFound)
	wantStatus(http.StatusNotFound) // a 404 is an answer: the probe closes the circuit
	if got := openCircuitsGauge(t) - gauge; got != 0 {
		t.Errorf("open circuits gauge is %v above where it started, want 0", got)
	}
	for range 5 {
		wantStatus(http.StatusNotFound) // 404s never open it
	}
	if n := tr.breakers.open(); n != 0 {
		t.Errorf("%d circuits open after 404s", n)
	}
}

// While the half-open probe is in flight, other requests fail fast.
func TestBreakerSingleProbe(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var block atomic.Bool
	gate := make(chan struct{})
	s := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if block.Load() {
			<-gate
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	})
	clk := clocktesting.NewFakeClock(time.Now())
	tr := newTransport(t, Options{Breaker: Breaker{FailureThreshold: 1, OpenFor: time.Minute}, Clock: clk})
	if got, _ := get(ctx, tr, s.URL+"/v2/", nil); got != http.StatusInternalServerError {
		t.Fatalf("got %d", got)
	}
	clk.Step(time.Minute)
	block.Store(true)
	probe := make(chan error)
	go func() {
		_, err := get(ctx, tr, s.URL+"/v2/", nil)
		probe <- err
	}()
	pollUntil(t, ctx, "the probe to arrive", func() bool { return s.requests() == 2 })
	if _, err := get(ctx, tr, s.URL+"/v2/", nil); !errors.Is(err, ErrCircuitOpen) {
		t.Errorf("second request during the probe: got %v, want ErrCircuitOpen", err)
	}
	close(gate)
	if err := <-probe; err != nil {
		t.Fatal(err)
	}
	if got, err := get(ctx, tr, s.URL+"/v2/", nil); err != nil || got != http.StatusOK {
		t.Errorf("after a successful probe: got %d, %v; want 200", got, err)
	}
}

// Connection errors count as failures.
func TestBreakerConnectionErrors(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	tr := newTransport(t, Options{Breaker: Breaker{FailureThreshold: 2, OpenFor: time.Minute}, Clock: clocktesting.NewFakeClock(time.Now())})
	for range 2 {
		if _, err := get(ctx, tr, "http://"+addr+"/v2/", nil); err == nil || errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("got %v, want a connection error", err)
		}
	}
	if _, err := get(ctx, tr, "http://"+addr+"/v2/", nil); !errors.Is(err, ErrCircuitOpen) {
		t.Errorf("got %v, want ErrCircuitOpen", err)
	}
}

// Unused circuits are forgotten, so the table and the gauge do not grow with
// every host a pod author ever named.
func TestBreakerForgetsStaleCircuits(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	bs := newBreakers(clk, 1, time.Minute)
	gauge := openCircuitsGauge(t)
	done, err := bs.allow("gone.example.com")
	if err != nil {
		t.Fatal(err)
	}
	done(outcomeFailure)
	if bs.open() != 1 {
		t.Fatal("circuit did not open")
	}
	clk.Step(11 * time.Minute)
	if _, err := bs.allow("other.example.com"); err != nil {
		t.Fatal(err)
	}
	if n := len(bs.hosts); n != 0 {
		t.Errorf("%d circuits tracked, want 0", n)
	}
	if got := openCircuitsGauge(t) - gauge; got != 0 {
		t.Errorf("gauge is %v above where it started", got)
	}
}

// TestBreakerPlainHTTPRegistry: an insecure registry that speaks plain HTTP
// answers every client's first HTTPS attempt with an HTTP response; those
// are answers, not outages. A burst of them (a scheduler starting with pods
// pending) must not open the circuit, or every resolution fails and pods
// fail open (found by test/faults' cold standby).
func TestBreakerPlainHTTPRegistry(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	tr := newTransport(t, Options{
		Registries: []Registry{{Host: host, Insecure: true}},
		Breaker:    Breaker{FailureThreshold: 2, OpenFor: time.Minute},
		Clock:      clocktesting.NewFakeClock(time.Now()),
	})
	for range 5 {
		_, err := get(ctx, tr, "https://"+host+"/v2/", nil)
		if !errors.Is(err, http.ErrSchemeMismatch) {
			t.Fatalf("HTTPS to a plain-HTTP registry: %v, want %v", err, http.ErrSchemeMismatch)
		}
	}
	if _, err := get(ctx, tr, srv.URL+"/v2/", nil); err != nil {
		t.Errorf("the plain-HTTP request after them: %v, want an answer (circuit closed)", err)
	}
}

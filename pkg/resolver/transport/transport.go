// Package transport is how the resolver reaches registries: one
// http.RoundTripper with per-host TLS, a policy on which hosts and addresses
// may be contacted (re-checked on every redirect hop and again at dial time),
// Retry-After handling, and per-registry concurrency caps and circuit
// breakers. It also lists each registry's mirrors.
package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"
	"k8s.io/utils/clock"
)

// Registry mirrors a node runtime's settings for one registry host.
type Registry struct {
	// Host is "host[:port]" as written in image references.
	Host string
	// Insecure skips TLS verification for this host only and allows plain HTTP.
	Insecure bool
	// CAFile is a PEM bundle trusted for this host only, on top of the system roots.
	CAFile string
	// Mirrors are hosts tried in order before Host; each mirror's own TLS
	// settings come from its own Registry entry.
	Mirrors []string
}

// Breaker configures the per-registry circuit breakers.
type Breaker struct {
	// FailureThreshold consecutive failures (5xx, connection errors, timeouts)
	// open a registry's circuit. Zero means 5; negative disables breakers.
	FailureThreshold int
	// OpenFor is how long an open circuit refuses requests before one probe is
	// let through. Zero means 30s.
	OpenFor time.Duration
}

// Options configure a Transport. Zero values mean the defaults noted per field.
type Options struct {
	Registries []Registry
	// Allowed and Denied are registry host globs with kubelet semantics ("*" is
	// one DNS label, ports must match). Deny wins; an empty Allowed allows any.
	// They apply to every host contacted, token services and redirect targets
	// included.
	Allowed, Denied []string
	// MaxConcurrentPerRegistry caps in-flight requests per host. Zero means 8.
	MaxConcurrentPerRegistry int
	Breaker                  Breaker
	// MaxRetryAfter is the longest Retry-After a request waits out (also
	// bounded by its context deadline). Zero means 10s; negative never waits.
	MaxRetryAfter time.Duration

	// DialTimeout, TLSHandshakeTimeout and ResponseHeaderTimeout bound each
	// phase of a request. Zero means 5s, 5s and 10s.
	DialTimeout, TLSHandshakeTimeout, ResponseHeaderTimeout time.Duration

	// Resolver resolves host names before the address guard checks them.
	// Nil means net.DefaultResolver.
	Resolver HostResolver
	// Proxy picks the proxy for a request URL, nil for none, as
	// golang.org/x/net/http/httpproxy's Config.ProxyFunc does. Nil means the
	// standard environment variables, read once by New: HTTPS_PROXY and
	// HTTP_PROXY (or their lower-case forms) name the proxy, NO_PROXY lists
	// hosts, domains and CIDRs to reach directly; loopback is never proxied.
	// The address guard vets each destination before it goes to a proxy.
	Proxy func(*url.URL) (*url.URL, error)
	// Clock drives breakers and Retry-After waits. Nil means the real clock.
	Clock clock.Clock
}

const (
	defaultMaxConcurrent         = 8
	defaultFailureThreshold      = 5
	defaultOpenFor               = 30 * time.Second
	defaultMaxRetryAfter         = 10 * time.Second
	defaultDialTimeout           = 5 * time.Second
	defaultTLSHandshakeTimeout   = 5 * time.Second
	defaultResponseHeaderTimeout = 10 * time.Second

	// maxRateLimitRetries is how many times one request is retried after 429.
	maxRateLimitRetries = 2
)

// Transport implements the registry network policy. It is safe for
// concurrent use; build one per scheduler and share it.
type Transport struct {
	policy        hostPolicy
	registries    map[string]Registry        // canonical host → its settings
	tlsHosts      map[string]*http.Transport // canonical host → its own TLS settings
	base          *http.Transport
	limits        *hostLimits
	breakers      *breakers
	clock         clock.Clock
	maxRetryAfter time.Duration
}

var _ http.RoundTripper = &Transport{}

// New validates opts and builds a Transport. Errors name the offending field.
func New(opts Options) (*Transport, error) {
	policy, err := newHostPolicy(opts.Allowed, opts.Denied)
	if err != nil {
		return nil, err
	}
	if opts.MaxConcurrentPerRegistry < 0 {
		return nil, fmt.Errorf("maxConcurrentPerRegistry: must not be negative, got %d", opts.MaxConcurrentPerRegistry)
	}
	withDefault(&opts.MaxConcurrentPerRegistry, defaultMaxConcurrent)
	withDefault(&opts.Breaker.FailureThreshold, defaultFailureThreshold)
	withDefault(&opts.Breaker.OpenFor, defaultOpenFor)
	withDefault(&opts.MaxRetryAfter, defaultMaxRetryAfter)
	withDefault(&opts.DialTimeout, defaultDialTimeout)
	withDefault(&opts.TLSHandshakeTimeout, defaultTLSHandshakeTimeout)
	withDefault(&opts.ResponseHeaderTimeout, defaultResponseHeaderTimeout)
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Proxy == nil {
		opts.Proxy = httpproxy.FromEnvironment().ProxyFunc()
	}
	RegisterMetrics()

	dialer := newGuardedDialer(opts.Resolver, net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second})
	t := &Transport{
		policy:        policy,
		registries:    map[string]Registry{},
		tlsHosts:      map[string]*http.Transport{},
		base:          newHTTPTransport(opts, dialer, &tls.Config{MinVersion: tls.VersionTLS12}),
		limits:        newHostLimits(opts.MaxConcurrentPerRegistry),
		breakers:      newBreakers(opts.Clock, opts.Breaker.FailureThreshold, opts.Breaker.OpenFor),
		clock:         opts.Clock,
		maxRetryAfter: opts.MaxRetryAfter,
	}
	for i, r := range opts.Registries {
		field := fmt.Sprintf("registries[%d]", i)
		if err := checkHostField(field+".host", r.Host); err != nil {
			return nil, err
		}
		key := canonicalHost("", r.Host)
		if _, dup := t.registries[key]; dup {
			return nil, fmt.Errorf("%s.host: %q is configured twice", field, r.Host)
		}
		for j, m := range r.Mirrors {
			mf := fmt.Sprintf("%s.mirrors[%d]", field, j)
			if err := checkHostField(mf, m); err != nil {
				return nil, err
			}
			// Fail at start-up rather than on every pull through the mirror.
			if err := policy.check(canonicalHost("", m)); err != nil {
				return nil, fmt.Errorf("%s: %w", mf, err)
			}
		}
		var rt *http.Transport
		if r.Insecure || r.CAFile != "" {
			// A transport of its own, so the setting cannot leak to other hosts.
			cfg, err := tlsConfig(r)
			if err != nil {
				return nil, fmt.Errorf("%s.caFile: %w", field, err)
			}
			rt = newHTTPTransport(opts, dialer, cfg)
		}
		for _, k := range aliases(key) {
			t.registries[k] = r
			if rt != nil {
				t.tlsHosts[k] = rt
			}
		}
	}
	return t, nil
}

func withDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func checkHostField(field, host string) error {
	if host == "" || strings.ContainsAny(host, "/ ") {
		return fmt.Errorf("%s: %q must be host[:port] without scheme or path", field, host)
	}
	return nil
}

// aliases returns the names a setting for host applies to: Docker Hub's
// several names, or host itself.
func aliases(host string) []string {
	if dockerHubHosts[host] {
		return []string{"docker.io", "index.docker.io", "registry-1.docker.io"}
	}
	return []string{host}
}

func tlsConfig(r Registry) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if r.Insecure {
		// Per host only: this config is used by a transport that serves r.Host alone.
		cfg.InsecureSkipVerify = true //nolint:gosec // operator opted in for this host
	}
	if r.CAFile != "" {
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA bundle: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s contains no PEM certificates", r.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

func newHTTPTransport(opts Options, d *guardedDialer, cfg *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy:                  d.proxyFor(opts.Proxy),
		DialContext:            d.DialContext,
		TLSClientConfig:        cfg,
		TLSHandshakeTimeout:    opts.TLSHandshakeTimeout,
		ResponseHeaderTimeout:  opts.ResponseHeaderTimeout,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConnsPerHost:    opts.MaxConcurrentPerRegistry,
		MaxResponseHeaderBytes: 1 << 20,
		ForceAttemptHTTP2:      true,
	}
}

// RoundTripper returns the RoundTripper for every registry request: the
// resolver's Options.Transport. The resolver wraps it in its metrics, a
// User-Agent and go-containerregistry's token and basic-auth transports, so
// every request, token fetches and redirects included, ends here.
func (t *Transport) RoundTripper() http.RoundTripper { return t }

// CloseIdleConnections closes idle connections to every host.
func (t *Transport) CloseIdleConnections() {
	t.base.CloseIdleConnections()
	for _, rt := range t.tlsHosts {
		rt.CloseIdleConnections()
	}
}

// RoundTrip checks policy, strips credentials from cross-host redirect hops,
// consults the host's circuit breaker, waits for a concurrency slot and sends
// the request, waiting out a short Retry-After.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.checkURL(req.URL); err != nil {
		closeRequestBody(req)
		return nil, err
	}
	host := canonicalHost(req.URL.Scheme, req.URL.Host)
	req = withoutCrossHostCredentials(req, host)
	done, err := t.breakers.allow(host)
	if err != nil {
		closeRequestBody(req)
		return nil, err
	}
	resp, o, err := t.send(req, host)
	done(o)
	return resp, err
}

// sensitiveHeaders are never sent to a host other than the one the request
// chain started at. net/http strips them only when the redirect leaves the
// original domain and its subdomains, ignoring ports, so
// registry.example.com:443 → registry.example.com:5000 or → evil.registry.example.com
// would keep them; different port means different registry here.
var sensitiveHeaders = []string{"Authorization", "Cookie", "Cookie2", "Proxy-Authorization"}

// withoutCrossHostCredentials returns req, or a copy without credential
// headers when req is a redirect hop (http.Client sets Response) to a host
// other than the first request's.
func withoutCrossHostCredentials(req *http.Request, host string) *http.Request {
	if req.Response == nil {
		return req
	}
	first := req
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	if canonicalHost(first.URL.Scheme, first.URL.Host) == host {
		return req
	}
	var clone *http.Request
	for _, h := range sensitiveHeaders {
		if _, ok := req.Header[h]; !ok {
			continue
		}
		if clone == nil {
			clone = req.Clone(req.Context())
		}
		clone.Header.Del(h)
	}
	if clone == nil {
		return req
	}
	return clone
}

// send performs the exchange under host's concurrency cap, retrying after a
// 429 whose Retry-After fits the budget. It returns what the exchange says
// about the registry's health.
func (t *Transport) send(req *http.Request, host string) (*http.Response, outcome, error) {
	ctx := req.Context()
	rt := t.base
	if own, ok := t.tlsHosts[host]; ok {
		rt = own
	}
	for attempt := 0; ; attempt++ {
		release, err := t.limits.acquire(ctx, host)
		if err != nil {
			closeRequestBody(req)
			return nil, outcomeNeutral, fmt.Errorf("waiting for a connection slot to %s: %w", host, err)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			release()
			return nil, errorOutcome(ctx, err), err
		}
		if resp.StatusCode != http.StatusTooManyRequests {
			resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
			if resp.StatusCode >= 500 {
				return resp, outcomeFailure, nil
			}
			return resp, outcomeSuccess, nil
		}

		wait, hasWait := parseRetryAfter(resp.Header.Get("Retry-After"), t.clock.Now())
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10) // lets the connection be reused
		_ = resp.Body.Close()
		release()
		limited := &RateLimitedError{Host: host, RetryAfter: wait}
		if !hasWait || attempt >= maxRateLimitRetries || wait >= t.waitBudget(ctx) {
			return nil, outcomeSuccess, limited
		}
		next, err := rewind(req)
		if err != nil {
			return nil, outcomeSuccess, limited
		}
		if err := t.sleep(ctx, wait); err != nil {
			return nil, outcomeNeutral, fmt.Errorf("%w (stopped waiting: %w)", limited, err)
		}
		req = next
	}
}

// waitBudget is how long a request may wait for a Retry-After: MaxRetryAfter,
// shortened to what is left of the request's deadline.
func (t *Transport) waitBudget(ctx context.Context) time.Duration {
	budget := t.maxRetryAfter
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < budget {
			budget = left
		}
	}
	return budget
}

func (t *Transport) sleep(ctx context.Context, d time.Duration) error {
	timer := t.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rewind returns a copy of req that can be sent again.
func rewind(req *http.Request) (*http.Request, error) {
	next := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return next, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("request body cannot be replayed")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	next.Body = body
	return next, nil
}

// errorOutcome classifies a transport error for the breaker: the caller
// giving up and our own refusals say nothing about the registry, and neither
// does a plain-HTTP registry answering an HTTPS request: it is up, and an
// insecure registry's client falls back to HTTP (go-containerregistry tries
// HTTPS first), so a burst of first requests to it must not open its circuit.
func errorOutcome(ctx context.Context, err error) outcome {
	switch {
	case errors.Is(err, ErrNotAllowed):
		return outcomeNeutral
	case errors.Is(ctx.Err(), context.Canceled):
		return outcomeNeutral
	case answeredInPlainHTTP(err):
		return outcomeNeutral
	}
	return outcomeFailure
}

// answeredInPlainHTTP reports whether err is a TLS handshake that got an HTTP
// response instead (http.Client turns it into http.ErrSchemeMismatch; a
// RoundTripper sees the TLS record error).
func answeredInPlainHTTP(err error) bool {
	var rec tls.RecordHeaderError
	if errors.As(err, &rec) && string(rec.RecordHeader[:]) == "HTTP/" {
		return true
	}
	return errors.Is(err, http.ErrSchemeMismatch)
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

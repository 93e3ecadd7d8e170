package registrytest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Memory is go-containerregistry's in-memory registry served on 127.0.0.1 for one test.
type Memory struct {
	// Requests records every request the server answered, including pushes: call
	// Requests.Reset after pushing fixtures and before the calls a test counts.
	Requests *RequestLog

	srv       *httptest.Server
	faults    *Faults
	auth      *auth
	referrers bool
	closeOnce sync.Once
}

// Option configures NewMemory.
type Option func(*Memory)

// WithBasicAuth protects the registry with HTTP Basic authentication for one account.
// private lists the repositories (path.Match patterns such as "team/*") that anonymous
// clients may not read; none means every repository is private. Writes always need the
// account.
func WithBasicAuth(username, password string, private ...string) Option {
	return func(m *Memory) {
		m.auth = &auth{scheme: schemeBasic, username: username, password: password, private: private}
	}
}

// WithBearerAuth protects the registry with the Docker token protocol: /v2/ requests need a
// bearer token from the server's /token endpoint, which grants pull on public repositories
// to anonymous clients and every action to the account. private is as for WithBasicAuth.
func WithBearerAuth(username, password string, private ...string) Option {
	return func(m *Memory) {
		m.auth = &auth{scheme: schemeBearer, username: username, password: password, private: private}
	}
}

// WithReferrersAPI serves the OCI 1.1 referrers API
// (/v2/NAME/referrers/DIGEST). Without it, as on Distribution 2.x, clients
// fall back to the referrers tag schema.
func WithReferrersAPI() Option {
	return func(m *Memory) { m.referrers = true }
}

// NewMemory starts an in-memory registry that t closes on cleanup.
func NewMemory(t testing.TB, opts ...Option) *Memory {
	t.Helper()
	m := &Memory{
		Requests: &RequestLog{},
		faults:   NewFaults(),
	}
	for _, o := range opts {
		o(m)
	}
	// registry.Logger(nil) panics, and the default logs every request to stderr.
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(m.referrers))
	if m.auth != nil {
		h = m.auth.wrap(h)
	}
	h = m.faults.Wrap(h)
	h = m.Requests.wrap(h)
	m.srv = httptest.NewServer(h)
	t.Cleanup(m.Close)
	return m
}

// Host returns "127.0.0.1:PORT", the registry part of image references.
func (m *Memory) Host() string {
	return m.srv.Listener.Addr().String()
}

// Client returns an HTTP client for the server that tests may use for raw requests.
func (m *Memory) Client() *http.Client {
	return m.srv.Client()
}

// Target returns where and as whom fixtures push to this registry.
func (m *Memory) Target() Target {
	tgt := Target{Host: m.Host()}
	if m.auth != nil {
		tgt.Username, tgt.Password = m.auth.username, m.auth.password
	}
	return tgt
}

// Fixtures returns builders that push to this registry.
func (m *Memory) Fixtures(t testing.TB) *Fixtures {
	return NewFixtures(t, m.Target())
}

// AddFault makes the registry misbehave for matching requests until the returned function
// is called. Faults are checked in the order they were added.
func (m *Memory) AddFault(f Fault) (remove func()) {
	return m.faults.Add(f)
}

// ClearFaults removes every fault.
func (m *Memory) ClearFaults() {
	m.faults.Clear()
}

// Close stops the server. It is safe to call more than once.
func (m *Memory) Close() {
	m.closeOnce.Do(func() {
		m.faults.Close()
		m.srv.CloseClientConnections()
		m.srv.Close()
	})
}

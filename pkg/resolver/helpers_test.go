package resolver

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/pkg/platform"
)

func TestMain(m *testing.M) {
	// Registration swaps the metrics' implementations; do it before any test measures.
	RegisterMetrics()
	os.Exit(m.Run())
}

// creds answers For from a fixed map, like a pod's pull secrets would.
type creds map[string][]Credential

func (c creds) For(host string) []Credential { return c[host] }

// credsFor gives cs for host.
func credsFor(host string, cs ...Credential) creds {
	return creds{host: cs}
}

func cred(id, user, pass string) Credential {
	return Credential{Source: "secret test/" + id, ID: id, Username: user, Password: pass}
}

// outcome is what tests compare: platforms as "os/arch[/variant][:os.version]" ("*" for
// Any) and the failure reason.
type outcome struct {
	Platforms []string
	Any       bool
	Reason    Reason
}

func outcomeOf(res Result) outcome {
	if res.Err != nil {
		return outcome{Reason: ReasonOf(res.Err)}
	}
	if res.Platforms.IsAny() {
		return outcome{Any: true}
	}
	return outcome{Platforms: platformStrings(res.Platforms)}
}

func platformStrings(s platform.Set) []string {
	var out []string
	for _, p := range s.Platforms() {
		str := p.String()
		if p.OSVersion != "" {
			str += ":" + p.OSVersion
		}
		out = append(out, str)
	}
	return out
}

func ok(platforms ...string) outcome {
	return outcome{Platforms: platforms}
}

func anyPlatform() outcome { return outcome{Any: true} }

func failed(r Reason) outcome { return outcome{Reason: r} }

// newTestResolver builds a resolver with test-sized budgets.
func newTestResolver(t testing.TB, o Options) *Resolver {
	t.Helper()
	if o.ResolveTimeout == 0 {
		o.ResolveTimeout = 10 * time.Second
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if tr, ok := o.Transport.(*http.Transport); ok {
			tr.CloseIdleConnections()
		}
	})
	return r
}

func testContext(t testing.TB) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	return ctx
}

// poll calls cond until it is true or the deadline passes.
func poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// roundTripperFunc adapts a function to http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// relative strips "HOST/" from a reference.
func relative(host, ref string) string {
	return strings.TrimPrefix(ref, host+"/")
}

func asError(err error, target **Error) bool {
	return errors.As(err, target)
}

// startRun runs r's workers until stop is called or the test ends; stop returns once
// Run has returned, and may be called more than once.
func startRun(t testing.TB, r *Resolver) (ctx context.Context, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(testContext(t))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		r.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-stopped
	}
	t.Cleanup(stop)
	return ctx, stop
}

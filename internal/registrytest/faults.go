package registrytest

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault changes how the registry answers matching requests: it can delay them, answer
// with another status, headers and body, or stream an oversized body.
type Fault struct {
	// Method limits the fault to one HTTP method; empty matches every method.
	Method string
	// Path limits the fault to URL paths with this prefix ("/v2/app/manifests/"); empty
	// matches every path.
	Path string
	// Delay holds the answer back. It ends early when the client gives up or the server
	// closes, so a slow-server test never slows down its own cleanup.
	Delay time.Duration
	// Wait, when non-nil, holds the answer back until it is closed: a slow registry whose
	// pace the test controls. Like Delay, it ends early when the client gives up.
	Wait <-chan struct{}
	// Status, when non-zero, answers with this status instead of passing the request on to
	// the registry.
	Status int
	// Header is added to the answer, e.g. Retry-After or Content-Type.
	Header http.Header
	// Body is the answer's body when Status is set.
	Body []byte
	// BodySize, when positive and Status is set, streams this many bytes of JSON-looking
	// filler instead of Body, without a Content-Length, to test readers that must stop on
	// their own.
	BodySize int64
	// Matched, when set, is called with each request the fault applies to, as it arrives:
	// a test learns that a request it holds back with Wait is there.
	Matched func(*http.Request)
	// Times is how many matching requests the fault applies to; 0 means all of them.
	Times int
	// Location, when set, answers 307 Temporary Redirect to Location(request)
	// (after Delay, Wait and Header), instead of Status or the registry.
	Location func(*http.Request) string
}

func (f *Fault) matches(r *http.Request) bool {
	return (f.Method == "" || f.Method == r.Method) && strings.HasPrefix(r.URL.Path, f.Path)
}

// Faults applies Fault rules to the requests of a handler it wraps: the
// in-memory registry's, or a test's own proxy in front of another registry.
type Faults struct {
	mu      sync.Mutex
	list    []*faultState
	closing chan struct{}
	once    sync.Once
}

// NewFaults returns an empty rule list.
func NewFaults() *Faults {
	return &Faults{closing: make(chan struct{})}
}

type faultState struct {
	Fault
	used int
}

// Add applies f to matching requests until the returned function is called.
// Faults are checked in the order they were added.
func (fs *Faults) Add(f Fault) func() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	st := &faultState{Fault: f}
	fs.list = append(fs.list, st)
	return func() {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		for i, s := range fs.list {
			if s == st {
				fs.list = append(fs.list[:i], fs.list[i+1:]...)
				return
			}
		}
	}
}

// Clear removes every fault.
func (fs *Faults) Clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.list = nil
}

// Close ends every held-back answer (Delay, Wait) at once, for a server that
// is shutting down. It is safe to call more than once.
func (fs *Faults) Close() {
	fs.once.Do(func() { close(fs.closing) })
}

// take returns the first matching fault that still has uses left, and uses it.
func (fs *Faults) take(r *http.Request) (Fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, s := range fs.list {
		if s.matches(r) && (s.Times == 0 || s.used < s.Times) {
			s.used++
			return s.Fault, true
		}
	}
	return Fault{}, false
}

// Wrap returns next with the faults applied.
func (fs *Faults) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := fs.take(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if f.Matched != nil {
			f.Matched(r)
		}
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			case <-fs.closing:
				t.Stop()
				return
			}
		}
		if f.Wait != nil {
			select {
			case <-f.Wait:
			case <-r.Context().Done():
				return
			case <-fs.closing:
				return
			}
		}
		for k, vs := range f.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		if f.Location != nil {
			http.Redirect(w, r, f.Location(r), http.StatusTemporaryRedirect)
			return
		}
		if f.Status == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if f.BodySize <= 0 {
			w.Header().Set("Content-Length", strconv.Itoa(len(f.Body)))
			w.WriteHeader(f.Status)
			_, _ = w.Write(f.Body)
			return
		}
		w.WriteHeader(f.Status)
		streamFiller(w, f.BodySize)
	})
}

// streamFiller writes n bytes shaped like the start of an index followed by spaces, in
// chunks, stopping early when the client goes away.
func streamFiller(w http.ResponseWriter, n int64) {
	chunk := []byte(`{"schemaVersion":2,"manifests":[`)
	pad := []byte(strings.Repeat(" ", 32<<10))
	for n > 0 {
		b := chunk
		if int64(len(b)) > n {
			b = b[:n]
		}
		if _, err := w.Write(b); err != nil {
			return
		}
		n -= int64(len(b))
		chunk = pad
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

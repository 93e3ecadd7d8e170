package registrytest

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Request is one request a test registry answered.
type Request struct {
	Method string
	// Path is the URL path without the query ("/v2/app/manifests/v1", "/token").
	Path   string
	Status int
}

// String returns "GET /v2/app/manifests/v1 200", the form Counts uses as keys.
func (r Request) String() string {
	return r.Method + " " + r.Path + " " + strconv.Itoa(r.Status)
}

// RequestLog records requests in arrival order. It is safe for concurrent use.
type RequestLog struct {
	mu   sync.Mutex
	reqs []Request
}

// All returns a copy of the recorded requests.
func (l *RequestLog) All() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.reqs...)
}

// Len returns how many requests were recorded.
func (l *RequestLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// Count returns how many recorded requests have the method (any when empty) and a path
// starting with pathPrefix.
func (l *RequestLog) Count(method, pathPrefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.reqs {
		if (method == "" || r.Method == method) && strings.HasPrefix(r.Path, pathPrefix) {
			n++
		}
	}
	return n
}

// Counts returns how often each distinct request occurred, keyed by Request.String. The
// map does not depend on arrival order, which makes it the thing to compare in tests of
// concurrent clients.
func (l *RequestLog) Counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]int, len(l.reqs))
	for _, r := range l.reqs {
		m[r.String()]++
	}
	return m
}

// Reset forgets everything recorded so far, typically after pushing fixtures.
func (l *RequestLog) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = nil
}

func (l *RequestLog) add(r Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
}

// wrap records each request when its status is written, before the client can see the
// response, so a test that counts requests right after a call returns never misses one.
func (l *RequestLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &StatusRecorder{ResponseWriter: w, Record: func(status int) {
			l.add(Request{Method: r.Method, Path: r.URL.Path, Status: status})
		}}
		defer sw.Done()
		next.ServeHTTP(sw, r)
	})
}

// StatusRecorder calls Record with a response's status as it is written, before
// the client can see it, so a count taken right after a call returns never
// misses the call's last request. Call Done when the handler returns: a
// handler that wrote nothing answered 200.
type StatusRecorder struct {
	http.ResponseWriter
	Record func(status int)
	wrote  bool
}

// Done records 200 if nothing was written.
func (w *StatusRecorder) Done() { w.writeHeaderOnce(http.StatusOK) }

func (w *StatusRecorder) writeHeaderOnce(code int) {
	if !w.wrote {
		w.wrote = true
		w.Record(code)
	}
}

// WriteHeader records code and passes it on.
func (w *StatusRecorder) WriteHeader(code int) {
	w.writeHeaderOnce(code)
	w.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200 and passes the body on.
func (w *StatusRecorder) Write(b []byte) (int, error) {
	w.writeHeaderOnce(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

// Flush lets fault bodies stream through the recorder.
func (w *StatusRecorder) Flush() {
	w.writeHeaderOnce(http.StatusOK)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController (which reverse proxies flush through)
// reach the real writer.
func (w *StatusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

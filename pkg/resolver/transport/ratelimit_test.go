package transport

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{in: "", wantOK: false},
		{in: "3", want: 3 * time.Second, wantOK: true},
		{in: " 0 ", want: 0, wantOK: true},
		{in: "-1", wantOK: false},
		{in: "soon", wantOK: false},
		{in: "99999999999999999999", wantOK: false}, // overflows int64
		{in: "9223372036854775807", want: time.Duration(1<<63 - 1).Truncate(time.Second), wantOK: true},
		{in: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second, wantOK: true},
		{in: now.Add(-time.Hour).Format(http.TimeFormat), want: 0, wantOK: true},
		{in: "Thursday, 02-Jan-25 03:05:05 GMT", want: time.Minute, wantOK: true}, // RFC 850
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := parseRetryAfter(tc.in, now)
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	tests := []struct {
		name string
		// retryAfter is sent with the first limitedResponses answers (429).
		retryAfter       string
		limitedResponses int
		maxRetryAfter    time.Duration
		deadline         time.Duration
		wantRequests     int
		wantErr          bool
		wantRetryAfter   time.Duration
	}{
		{name: "wait within budget then succeed", retryAfter: "1", limitedResponses: 1, deadline: 10 * time.Second, wantRequests: 2},
		{name: "zero Retry-After retried at once", retryAfter: "0", limitedResponses: 2, wantRequests: 3},
		{name: "gives up after two retries", retryAfter: "0", limitedResponses: 100, wantRequests: 3, wantErr: true},
		{name: "beyond MaxRetryAfter", retryAfter: "120", limitedResponses: 1, maxRetryAfter: 5 * time.Second, wantRequests: 1, wantErr: true, wantRetryAfter: 120 * time.Second},
		{name: "beyond the context deadline", retryAfter: "2", limitedResponses: 1, deadline: 500 * time.Millisecond, wantRequests: 1, wantErr: true, wantRetryAfter: 2 * time.Second},
		{name: "no Retry-After", limitedResponses: 1, wantRequests: 1, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			var n atomic.Int32
			s := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if int(n.Add(1)) <= tc.limitedResponses {
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					w.WriteHeader(http.StatusTooManyRequests)
				}
			})
			tr := newTransport(t, Options{MaxRetryAfter: tc.maxRetryAfter})
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			status, err := get(ctx, tr, s.URL+"/v2/", nil)
			if got := s.requests(); got != tc.wantRequests {
				t.Errorf("server got %d requests, want %d", got, tc.wantRequests)
			}
			if !tc.wantErr {
				if err != nil || status != http.StatusOK {
					t.Fatalf("got %d, %v; want 200", status, err)
				}
				return
			}
			var rl *RateLimitedError
			if !errors.Is(err, ErrRateLimited) || !errors.As(err, &rl) {
				t.Fatalf("got %d, %v; want a RateLimitedError", status, err)
			}
			if rl.RetryAfter != tc.wantRetryAfter {
				t.Errorf("RetryAfter = %v, want %v", rl.RetryAfter, tc.wantRetryAfter)
			}
			if rl.Host != s.host() {
				t.Errorf("Host = %q, want %q", rl.Host, s.host())
			}
		})
	}
}

// A request body is replayed on retry.
func TestRateLimitReplaysBody(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var n atomic.Int32
	var bodies []string
	s := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 16)
		k, _ := r.Body.Read(b)
		bodies = append(bodies, string(b[:k]))
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	tr := newTransport(t, Options{})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v2/", strings.NewReader("payload"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if diff := cmp.Diff([]string{"payload", "payload"}, bodies); diff != "" {
		t.Errorf("bodies (-want,+got):\n%s", diff)
	}
}

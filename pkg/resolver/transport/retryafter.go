package transport

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date
// (RFC 9110 §10.2.3). ok is false when the header is absent or malformed.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		const maxSecs = int64((1<<63 - 1) / time.Second)
		if secs > maxSecs {
			secs = maxSecs
		}
		return time.Duration(secs) * time.Second, true
	}
	when, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d = when.Sub(now); d < 0 {
		d = 0
	}
	return d, true
}

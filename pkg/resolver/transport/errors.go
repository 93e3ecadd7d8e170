package transport

import (
	"fmt"
	"time"

	"github.com/archfilter/archfilter/pkg/resolver"
)

// Sentinels for errors.Is. Every error the Transport itself produces wraps
// exactly one of them, so callers can classify failures without parsing text.
// They are the resolver's own sentinels, so its error classification maps
// them to Reasons without importing this package (which imports it).
var (
	// ErrNotAllowed: the host is outside the allowed/denied registry policy, the
	// address it resolves to is refused (link-local, cloud metadata,
	// unspecified), or plain HTTP was used for a host not marked insecure.
	ErrNotAllowed = resolver.ErrNotAllowed
	// ErrCircuitOpen: the registry failed repeatedly and is not contacted until
	// its breaker lets a probe through.
	ErrCircuitOpen = resolver.ErrCircuitOpen
	// ErrRateLimited: the registry answered 429 and waiting for Retry-After
	// would exceed the request's deadline or MaxRetryAfter.
	ErrRateLimited = resolver.ErrRateLimited
)

// RateLimitedError says how long the registry asked us to wait. It wraps
// ErrRateLimited.
type RateLimitedError struct {
	Host string
	// RetryAfter is the registry's Retry-After; zero when it sent none.
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%s: %s asked to retry after %s", ErrRateLimited, e.Host, e.RetryAfter)
	}
	return fmt.Sprintf("%s: %s answered 429 without Retry-After", ErrRateLimited, e.Host)
}

func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }

// CircuitOpenError says when the breaker for Host lets the next probe through.
// It wraps ErrCircuitOpen.
type CircuitOpenError struct {
	Host    string
	RetryAt time.Time
}

func (e *CircuitOpenError) Error() string {
	return fmt.Sprintf("%s for %s until %s", ErrCircuitOpen, e.Host, e.RetryAt.UTC().Format(time.RFC3339))
}

func (e *CircuitOpenError) Unwrap() error { return ErrCircuitOpen }

func notAllowed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotAllowed}, args...)...)
}

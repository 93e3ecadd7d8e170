package resolver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Errors the Options.Transport wraps (with %w) so that failures it decides on get the right
// Reason. The resolver itself never returns them bare.
var (
	// ErrNotAllowed: the registry or the address it resolves to is refused by policy.
	ErrNotAllowed = errors.New("registry not allowed")
	// ErrCircuitOpen: recent failures opened the registry's circuit breaker.
	ErrCircuitOpen = errors.New("registry circuit breaker open")
	// ErrRateLimited: the registry answered 429 and Retry-After does not fit the budget.
	ErrRateLimited = errors.New("registry rate limit")
)

// ErrStopped is the cause of the failure passed to ResolveAsync callbacks after Run
// returned; its Reason is Timeout, since the answer did not come in time.
var ErrStopped = errors.New("resolver stopped")

// errInvalidManifest marks failures that are the manifest's fault: too large, too many
// entries, nested too deep, unparseable, or not matching its digest.
var errInvalidManifest = errors.New("invalid manifest")

func invalidManifest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalidManifest, fmt.Sprintf(format, args...))
}

// statusError is a registry answer with an unexpected status.
type statusError struct {
	method string
	// path is the URL path only: queries can carry tokens.
	path       string
	status     int
	code       string // the registry's error code, e.g. MANIFEST_UNKNOWN
	message    string
	retryAfter string
}

func (e *statusError) Error() string {
	s := e.method + " " + e.path + ": HTTP " + strconv.Itoa(e.status)
	if e.code != "" {
		s += " " + e.code
	}
	if e.message != "" {
		s += ": " + e.message
	}
	if e.retryAfter != "" {
		s += " (Retry-After " + e.retryAfter + ")"
	}
	return s
}

// classify maps a failure to a Reason and the HTTP status behind it, if any. budgetErr is
// the error of the resolution's context: once the budget is spent, whatever the last
// request reported, the image timed out.
func classify(err error, budgetErr error) (Reason, int) {
	status := 0
	var se *statusError
	var te *transport.Error
	switch {
	case errors.As(err, &se):
		status = se.status
	case errors.As(err, &te):
		status = te.StatusCode
	}
	switch {
	case errors.Is(err, ErrNotAllowed):
		return ReasonNotAllowed, status
	case errors.Is(err, ErrCircuitOpen):
		return ReasonCircuitOpen, status
	case errors.Is(err, ErrRateLimited):
		// Only a registry's 429 produces it, even when the transport gave up
		// waiting and no response is left to read the status from.
		return ReasonRateLimited, http.StatusTooManyRequests
	case errors.Is(err, ErrStopped):
		return ReasonTimeout, status
	case errors.Is(err, errInvalidManifest):
		return ReasonInvalidManifest, status
	}
	// The registry answered: its status says what went wrong.
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return ReasonUnauthorized, status
	case status == http.StatusNotFound:
		return ReasonNotFound, status
	case status == http.StatusTooManyRequests:
		return ReasonRateLimited, status
	case status != 0:
		return ReasonUnreachable, status
	}
	var timeout interface{ Timeout() bool }
	switch {
	case budgetErr != nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.As(err, &timeout) && timeout.Timeout():
		return ReasonTimeout, status
	}
	// Refused connections, TLS and DNS failures.
	return ReasonUnreachable, status
}

package resolver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Reason classifies failures for events, metrics (low cardinality) and policy.
type Reason string

// Failure reasons.
const (
	ReasonInvalidReference Reason = "InvalidReference"
	ReasonNotAllowed       Reason = "RegistryNotAllowed" // allowed/denied registries, refused addresses
	ReasonUnauthorized     Reason = "Unauthorized"       // 401/403 with every candidate credential
	ReasonNotFound         Reason = "NotFound"           // 404 manifest or config
	ReasonRateLimited      Reason = "RateLimited"        // 429 beyond the time budget
	ReasonTimeout          Reason = "Timeout"            // resolveTimeout exceeded
	ReasonUnreachable      Reason = "Unreachable"        // connection errors, 5xx
	ReasonCircuitOpen      Reason = "CircuitOpen"        // registry's circuit breaker is open
	ReasonInvalidManifest  Reason = "InvalidManifest"    // too large, too many descriptors, bad JSON, cycles
	ReasonLocalImage       Reason = "LocalImage"         // localhost/name: built on the node, no registry to ask
)

// Error describes a failed resolution precisely enough for a person to act on.
type Error struct {
	Image            string
	Registry         string
	CredentialSource string // "anonymous" when none was used
	StatusCode       int    // last HTTP status, 0 if none
	Reason           Reason
	Err              error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("resolving image %q on registry %s with %s credentials: %s", e.Image, e.Registry, e.CredentialSource, e.Reason)
	if e.Reason == ReasonInvalidReference {
		// Nothing was asked of any registry, with any credentials: the reference
		// did not parse (and may name no registry at all).
		msg = fmt.Sprintf("resolving image %q: %s", e.Image, e.Reason)
	}
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.StatusCode)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the Reason of err, or "" when err is not an *Error.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func (r *Resolver) newError(ctx context.Context, req Request, ep Endpoint, source string, err error) *Error {
	reason, status := classify(err, ctx.Err())
	return &Error{
		Image:            req.Image,
		Registry:         ep.Host,
		CredentialSource: source,
		StatusCode:       status,
		Reason:           reason,
		Err:              err,
	}
}

func invalidResult(ref *imageRef) Result {
	return Result{Err: ref.invalid}
}

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

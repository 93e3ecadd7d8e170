// Package resolver answers "which platforms can run this image?" from registry
// manifests: it parses references, fetches indexes, manifests and configs with
// the pod's credentials, caches answers, and does all of it off the scheduling
// path on a bounded worker pool.
package resolver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/archfilter/archfilter/pkg/platform"
)

// Request is one image to resolve, with the credentials that may be used for it.
type Request struct {
	// Image is the reference as written in the pod spec ("nginx",
	// "registry:5000/app:v1@sha256:…").
	Image string
	// Credentials yields the candidate credentials for a registry host, in the
	// order the kubelet would try them. Nil means anonymous only.
	Credentials Credentials
}

// Result is what is known about one image.
type Result struct {
	// Platforms are the platforms the image runs on. It is platform.Any() for
	// images that never constrain placement (OCI artifacts, data-only images).
	Platforms platform.Set
	// Digest is the manifest digest the answer was read from.
	Digest string
	// Err is non-nil when resolution failed; errors.As(Err, **Error) gives details.
	Err error
	// Expires is when the cached answer stops being served.
	Expires time.Time
}

// Credentials yields candidate credentials for a registry host (with port, as
// in the reference: "registry.example.com:5000", "index.docker.io").
type Credentials interface {
	For(registry string) []Credential
}

// ContextCredentials is implemented by credential sources with slow members
// (credential provider plugins): For answers from what is at hand, and workers
// about to fetch call ForContext, which may wait for them.
type ContextCredentials interface {
	Credentials
	ForContext(ctx context.Context, registry string) []Credential
}

// Credential is one username/password or token, with where it came from.
type Credential struct {
	// Source names the credential for people, never its secret part:
	// "secret default/regcred", "serviceaccount default/builder secret regcred",
	// "global pull secret kube-system/archfilter-pull-secret",
	// "docker config file /etc/…", "credential provider ecr-credential-provider".
	Source string
	// ID is a stable, non-reversible identity of the secret material (a hash),
	// used to scope cache entries: an answer obtained with one credential is
	// never served to a request that does not hold the same credential.
	ID string

	Username      string
	Password      string
	IdentityToken string
	RegistryToken string
}

// String names the credential without its secret part, so that logging or
// printing one never leaks it.
func (c Credential) String() string {
	return fmt.Sprintf("credential from %s (id %.12s)", c.Source, c.ID)
}

// GoString is String, for %#v.
func (c Credential) GoString() string { return c.String() }

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

// Interface is what the scheduler plugin uses; *Resolver implements it. Lookup
// and ResolveAsync never block on I/O.
type Interface interface {
	// Lookup returns the cached answer for req, if any (including a cached
	// failure). It only reads memory.
	Lookup(req Request) (Result, bool)
	// ResolveAsync schedules resolution of req on the worker pool and returns
	// at once. done is called exactly once, from a worker goroutine, with the
	// result (also stored in the cache). Concurrent requests for the same image
	// and credential scope share one fetch.
	ResolveAsync(req Request, done func(Result))
	// Resolve resolves req and waits for the answer (for tools and tests).
	Resolve(ctx context.Context, req Request) Result
}

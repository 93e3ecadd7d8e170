package resolver

import (
	"context"
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

package resolver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/distribution/reference"
)

// imageRef is a parsed image reference in the canonical form the cache keys on. It is
// immutable once built.
type imageRef struct {
	// image is the reference as written in the pod.
	image string
	// canonical is registry/repository:tag or registry/repository@digest. The
	// other names are slices of it, kept as lengths: a cached reference costs
	// one string and a small struct (see BenchmarkCacheMemory).
	canonical string
	// registryLen and repoNameLen end registry and repoName in canonical.
	registryLen, repoNameLen uint16
	// digested is true when canonical ends in a digest rather than a tag.
	digested bool
	// err is non-nil for references that do not parse; they are cached too, so a pod with
	// a typo costs one parse, not one per scheduling attempt. invalid is the failure
	// reported for them, built once.
	err     error
	invalid *Error
}

// registry is the host the kubelet would pull from, with port: "index.docker.io",
// "registry.example.com:5000", "[::1]:5000". Empty for a reference that did not parse.
func (r *imageRef) registry() string { return r.canonical[:r.registryLen] }

// repoName is registry + "/" + repository.
func (r *imageRef) repoName() string { return r.canonical[:r.repoNameLen] }

// repository is the path in the registry: "library/nginx".
func (r *imageRef) repository() string {
	if r.repoNameLen == 0 {
		return ""
	}
	return r.canonical[r.registryLen+1 : r.repoNameLen]
}

// identifier is what goes after /manifests/ in the registry API: the tag or
// the digest. A reference with both means its digest, as for the container
// runtime.
func (r *imageRef) identifier() string {
	if r.repoNameLen == 0 {
		return ""
	}
	return r.canonical[r.repoNameLen+1:]
}

// tag is the reference's tag, or "" when it names a digest.
func (r *imageRef) tag() string {
	if r.digested {
		return ""
	}
	return r.identifier()
}

// digest is the reference's digest, or "" when it names a tag.
func (r *imageRef) digest() string {
	if !r.digested {
		return ""
	}
	return r.identifier()
}

// parseReference parses image as the kubelet does (k8s.io/kubernetes/pkg/util/parsers, which
// calls github.com/distribution/reference.ParseNormalizedNamed) and as containerd's CRI
// normalises it: an implicit docker.io and library/; a first path component is a registry
// host when it is "localhost", contains "." or ":", or has an upper-case letter ("Foo/bar");
// ports and bracketed IPv6 hosts; one-character repositories; sha256, sha384 and sha512
// digests; and a digest that wins over a tag. What the kubelet refuses is refused here, so
// it fails early as InvalidReference instead of as NotFound after a round trip.
//
// "localhost/name" names an image built on the node (podman, buildah and CRI-O name local
// builds so): there is no registry to ask, and asking Docker Hub would answer for a different
// image, so it fails at once with LocalImage and the failure policy decides.
func parseReference(image string) *imageRef {
	ref := parseName(image)
	switch {
	case ref.err != nil:
		ref.invalid = &Error{Image: image, Registry: ref.registry(), CredentialSource: anonymousScope,
			Reason: ReasonInvalidReference, Err: ref.err}
	case ref.registry() == localImageHost:
		ref.err = errLocalImage
		ref.invalid = &Error{Image: image, Registry: ref.registry(), CredentialSource: anonymousScope,
			Reason: ReasonLocalImage, Err: errLocalImage}
	}
	return ref
}

// localImageHost is the registry of images built on the node. "localhost:5000" is a
// registry on the node's loopback and is resolved like any other.
const localImageHost = "localhost"

var errLocalImage = errors.New(`"localhost/" names an image built on the node; no registry can tell its platforms (declare them with the archfilter.io/platforms annotation)`)

// maxReferenceLength bounds what parseName hands to the parser. No reference the kubelet
// accepts is longer than 526 bytes: a name of at most 255 (distribution/reference's
// NameTotalLengthMax, counted after "index.docker.io" is shortened to "docker.io", so 261
// as written), ":" and a tag of at most 128, "@" and a sha512 digest of 135. A pod's image
// has no length limit of its own, and the parser's cost on a refused one grows with it
// (lower-casing, which turns each invalid UTF-8 byte into three, then the error quoting it
// twice): about 40 bytes allocated per byte, and a cached error several times its size.
const maxReferenceLength = 1024

func parseName(image string) *imageRef {
	ref := &imageRef{image: image}
	if len(image) > maxReferenceLength {
		ref.err = fmt.Errorf("invalid reference %q… (%d bytes): longer than any valid reference", image[:64], len(image))
		return ref
	}
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		ref.err = fmt.Errorf("invalid reference %q: %w", image, err)
		return ref
	}
	registry := reference.Domain(named)
	if registry == "docker.io" {
		// The host Docker Hub's API answers on; the cache and credentials key on it.
		registry = "index.docker.io"
	}
	repository := reference.Path(named)
	if err := checkPort(registry); err != nil {
		ref.err = fmt.Errorf("invalid reference %q: %w", image, err)
		return ref
	}
	sep, id := ":", "latest"
	switch r := named.(type) {
	case reference.Digested:
		sep, id = "@", r.Digest().String()
	case reference.Tagged:
		id = r.Tag()
	}
	// Every name is a slice of canonical: a cached reference costs one string,
	// and keeps nothing of the parser's alive. distribution/reference caps a
	// name at 255 characters and a tag at 128, so the lengths fit.
	ref.canonical = registry + "/" + repository + sep + id
	ref.registryLen = uint16(len(registry))
	ref.repoNameLen = uint16(len(registry) + 1 + len(repository))
	ref.digested = sep == "@"
	return ref
}

// checkPort refuses ports that cannot exist, which name accepts.
func checkPort(registry string) error {
	_, port, err := net.SplitHostPort(registry)
	if err != nil {
		return nil // no port
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("registry %q has an invalid port", registry)
	}
	return nil
}

// refCache remembers parsed references: Lookup runs in the scheduler's PreEnqueue for
// every pod, and parsing costs more than the cache lookup it precedes.
//
// It is bounded crudely: when full it starts over. The working set, the images of pods
// currently being scheduled, refills it at the cost of one parse each.
type refCache struct {
	mu  sync.RWMutex
	m   map[string]*imageRef
	max int
}

func newRefCache(max int) *refCache {
	return &refCache{m: make(map[string]*imageRef, min(max, 1024)), max: max}
}

func (c *refCache) get(image string) *imageRef {
	c.mu.RLock()
	ref, ok := c.m[image]
	c.mu.RUnlock()
	if ok {
		return ref
	}
	ref = parseReference(image)
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[image] = ref
	c.mu.Unlock()
	return ref
}

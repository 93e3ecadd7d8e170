package resolver

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
)

// imageRef is a parsed image reference in the canonical form the cache keys on. It is
// immutable once built.
type imageRef struct {
	// image is the reference as written in the pod.
	image string
	// registry is the host the kubelet would pull from, with port: "index.docker.io",
	// "registry.example.com:5000", "[::1]:5000".
	registry string
	// repository is the path in the registry: "library/nginx".
	repository string
	// repoName is registry + "/" + repository.
	repoName string
	// Exactly one of tag and digest is set: a reference with both means its digest, as
	// for the container runtime.
	tag    string
	digest string
	// canonical is repoName + ":" + tag or repoName + "@" + digest.
	canonical string
	// err is non-nil for references that do not parse; they are cached too, so a pod with
	// a typo costs one parse, not one per scheduling attempt. invalid is the failure
	// reported for them, built once.
	err     error
	invalid *Error
}

// identifier is what goes after /manifests/ in the registry API.
func (r *imageRef) identifier() string {
	if r.digest != "" {
		return r.digest
	}
	return r.tag
}

// digestName returns repoName@digest, the key of a digest's answer.
func (r *imageRef) digestName(digest string) string {
	return r.repoName + "@" + digest
}

// parseReference parses image the way the kubelet's runtime does: an implicit docker.io
// and library/, ports and bracketed IPv6 hosts, and a digest that wins over a tag.
//
// go-containerregistry's name package does the parsing. It accepts a few references the
// runtime rejects (empty path components such as "a//b"); those are refused here so they
// fail as InvalidReference instead of as NotFound after a round trip. It rejects one-letter
// repositories ("registry:5000/a"), which the runtime accepts: a known limitation.
func parseReference(image string) *imageRef {
	ref := parseName(image)
	if ref.err != nil {
		ref.invalid = &Error{Image: image, Registry: ref.registry, CredentialSource: anonymousScope,
			Reason: ReasonInvalidReference, Err: ref.err}
	}
	return ref
}

func parseName(image string) *imageRef {
	ref := &imageRef{image: image}
	r, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		ref.err = err
		return ref
	}
	repo := r.Context()
	ref.registry = repo.RegistryStr()
	ref.repository = repo.RepositoryStr()
	if err := checkPort(ref.registry); err != nil {
		ref.err = fmt.Errorf("invalid reference %q: %w", image, err)
		return ref
	}
	if err := checkPath(ref.repository); err != nil {
		ref.err = fmt.Errorf("invalid reference %q: %w", image, err)
		return ref
	}
	ref.repoName = repo.Name()
	switch r := r.(type) {
	case name.Digest:
		ref.digest = r.DigestStr()
		ref.canonical = ref.repoName + "@" + ref.digest
	case name.Tag:
		ref.tag = r.TagStr()
		ref.canonical = ref.repoName + ":" + ref.tag
	default:
		ref.err = fmt.Errorf("invalid reference %q: unexpected kind %T", image, r)
	}
	return ref
}

// checkPath enforces the distribution grammar's path components: each non-empty and
// starting and ending with a letter or digit.
func checkPath(repository string) error {
	for comp := range strings.SplitSeq(repository, "/") {
		if comp == "" || !isAlnum(comp[0]) || !isAlnum(comp[len(comp)-1]) {
			return fmt.Errorf("repository %q has an invalid path component %q", repository, comp)
		}
	}
	return nil
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

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
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

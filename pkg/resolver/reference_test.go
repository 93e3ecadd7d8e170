package resolver

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	digest512 = "sha512:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	digestA = "sha256:0123456789012345678901234567890123456789012345678901234567890123"
	digestB = "sha256:abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcd"
)

// parsedRef is what TestParseReference compares.
type parsedRef struct {
	Registry, Repository, Tag, Digest, Canonical string
}

// validReferences are references the kubelet accepts, with what the resolver makes of them.
// FuzzParseReference starts from them too.
var validReferences = []struct {
	image string
	want  parsedRef
}{
	{"nginx", parsedRef{"index.docker.io", "library/nginx", "latest", "", "index.docker.io/library/nginx:latest"}},
	{"nginx:1.25", parsedRef{"index.docker.io", "library/nginx", "1.25", "", "index.docker.io/library/nginx:1.25"}},
	{"docker.io/nginx", parsedRef{"index.docker.io", "library/nginx", "latest", "", "index.docker.io/library/nginx:latest"}},
	{"docker.io/library/nginx", parsedRef{"index.docker.io", "library/nginx", "latest", "", "index.docker.io/library/nginx:latest"}},
	{"index.docker.io/bitnami/redis:7", parsedRef{"index.docker.io", "bitnami/redis", "7", "", "index.docker.io/bitnami/redis:7"}},
	{"bitnami/redis", parsedRef{"index.docker.io", "bitnami/redis", "latest", "", "index.docker.io/bitnami/redis:latest"}},
	{"registry.example.com:5000/team/app:v1", parsedRef{"registry.example.com:5000", "team/app", "v1", "", "registry.example.com:5000/team/app:v1"}},
	{"localhost:5000/app", parsedRef{"localhost:5000", "app", "latest", "", "localhost:5000/app:latest"}},
	{"[::1]:5000/app:v1", parsedRef{"[::1]:5000", "app", "v1", "", "[::1]:5000/app:v1"}},
	{"[fd00::1]/team/app", parsedRef{"[fd00::1]", "team/app", "latest", "", "[fd00::1]/team/app:latest"}},
	{"nginx@" + digestA, parsedRef{"index.docker.io", "library/nginx", "", digestA, "index.docker.io/library/nginx@" + digestA}},
	// The digest wins over the tag, as for the container runtime.
	{"nginx:1.25@" + digestA, parsedRef{"index.docker.io", "library/nginx", "", digestA, "index.docker.io/library/nginx@" + digestA}},
	{"registry.example.com:5000/app:v1@" + digestB, parsedRef{"registry.example.com:5000", "app", "", digestB, "registry.example.com:5000/app@" + digestB}},
	// distribution/reference (the kubelet's parser) accepts sha384 and sha512 digests.
	{"nginx@" + digest512, parsedRef{"index.docker.io", "library/nginx", "", digest512, "index.docker.io/library/nginx@" + digest512}},
	// A first component with an upper-case letter is a registry host, even without a dot
	// (distribution/reference splitDockerDomain): not a Docker Hub namespace.
	{"Foo/bar", parsedRef{"Foo", "bar", "latest", "", "Foo/bar:latest"}},
	// One-character repository components are valid in the distribution grammar.
	{"registry:5000/a", parsedRef{"registry:5000", "a", "latest", "", "registry:5000/a:latest"}},
	{"a", parsedRef{"index.docker.io", "library/a", "latest", "", "index.docker.io/library/a:latest"}},
	{"x/y:1", parsedRef{"index.docker.io", "x/y", "1", "", "index.docker.io/x/y:1"}},
	// localhost with a port is a registry on the node's loopback, resolved as any other.
	{"localhost:5000/team/app", parsedRef{"localhost:5000", "team/app", "latest", "", "localhost:5000/team/app:latest"}},
	// The longest reference the kubelet accepts, 526 bytes: a name of 255 once index.docker.io
	// is docker.io, a tag of 128 and a sha512 digest.
	{longestReference, parsedRef{"index.docker.io", longestPath, "", digest512, "index.docker.io/" + longestPath + "@" + digest512}},
}

// longestPath makes "docker.io/" + longestPath the longest name distribution/reference
// accepts, 255 bytes; longestReference is the longest reference.
var (
	longestPath      = "a/" + strings.Repeat("b", 243)
	longestReference = "index.docker.io/" + longestPath + ":" + strings.Repeat("t", 128) + "@" + digest512
)

func TestParseReference(t *testing.T) {
	for _, tc := range validReferences {
		t.Run(tc.image, func(t *testing.T) {
			ref := parseReference(tc.image)
			if ref.err != nil {
				t.Fatalf("parseReference(%q): %v", tc.image, ref.err)
			}
			got := parsedRef{ref.registry(), ref.repository(), ref.tag(), ref.digest(), ref.canonical}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// invalidReferences are references the kubelet refuses, and the resolver with them.
var invalidReferences = []string{
	"",
	"Nginx",
	"nginx:",
	"nginx@sha256:short",
	"nginx@md5:" + digestA[7:],
	"nginx:a:b",
	"a//b",
	"team/-app",
	"team/app-",
	"registry:99999999/app",
	"nginx@" + digestA + "@" + digestB,
	// The kubelet refuses these too (distribution/reference): upper case in the path,
	// a 64-hex-digit name (ambiguous with an image ID), a digest of the wrong length.
	"foo/Bar",
	"0123456789012345678901234567890123456789012345678901234567890123",
	"nginx@sha512:" + digestA[7:],
	"Foo",
	"nginx:-tag",
	// Longer than any valid reference: refused before parsing, at a cost that does not grow
	// with it (FuzzParseReference found the parser allocating 40 bytes per byte of a long
	// invalid reference).
	"a/" + strings.Repeat("b", maxReferenceLength),
	"A" + strings.Repeat("\x9e", 2<<10),
	longestReference + "0",
}

func TestParseReferenceInvalid(t *testing.T) {
	for _, image := range invalidReferences {
		t.Run(image, func(t *testing.T) {
			ref := parseReference(image)
			if ref.err == nil {
				t.Fatalf("parseReference(%q) = %+v, want an error", image, ref)
			}
			if ref.invalid == nil || ref.invalid.Reason != ReasonInvalidReference || ref.invalid.Image != image {
				t.Errorf("invalid = %+v, want an InvalidReference error for %q", ref.invalid, image)
			}
		})
	}
}

// localImageReferences name images built on the node.
var localImageReferences = []string{"localhost/app", "localhost/team/app:v1", "localhost/app@" + digestA}

// TestParseReferenceLocalImage: the kubelet and containerd read "localhost/name" as an image
// on the registry host "localhost" (distribution/reference: localhost is always a domain),
// the name podman, buildah and CRI-O give local builds; it is never index.docker.io/localhost/name.
func TestParseReferenceLocalImage(t *testing.T) {
	for _, image := range localImageReferences {
		t.Run(image, func(t *testing.T) {
			ref := parseReference(image)
			if ref.registry() != "localhost" {
				t.Errorf("registry = %q, want localhost", ref.registry())
			}
			if ref.invalid == nil || ref.invalid.Reason != ReasonLocalImage || ref.invalid.Image != image {
				t.Errorf("invalid = %+v, want a LocalImage error for %q", ref.invalid, image)
			}
		})
	}
}

func TestRefCacheBound(t *testing.T) {
	c := newRefCache(3)
	for _, image := range []string{"a1", "a2", "a3", "a4", "a5"} {
		c.get(image)
		if n := len(c.m); n > 3 {
			t.Fatalf("%d parsed references cached, bound 3", n)
		}
	}
	if c.get("a5") != c.get("a5") {
		t.Error("a cached reference was parsed again")
	}
}

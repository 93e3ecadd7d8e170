package resolver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	digest512 = "sha512:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	digestA = "sha256:0123456789012345678901234567890123456789012345678901234567890123"
	digestB = "sha256:abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcd"
)

func TestParseReference(t *testing.T) {
	type parsed struct {
		Registry, Repository, Tag, Digest, Canonical string
	}
	for _, tc := range []struct {
		image string
		want  parsed
	}{
		{"nginx", parsed{"index.docker.io", "library/nginx", "latest", "", "index.docker.io/library/nginx:latest"}},
		{"nginx:1.25", parsed{"index.docker.io", "library/nginx", "1.25", "", "index.docker.io/library/nginx:1.25"}},
		{"docker.io/nginx", parsed{"index.docker.io", "library/nginx", "latest", "", "index.docker.io/library/nginx:latest"}},
		{"docker.io/library/nginx", parsed{"index.docker.io", "library/nginx", "latest", "", "index.docker.io/library/nginx:latest"}},
		{"index.docker.io/bitnami/redis:7", parsed{"index.docker.io", "bitnami/redis", "7", "", "index.docker.io/bitnami/redis:7"}},
		{"bitnami/redis", parsed{"index.docker.io", "bitnami/redis", "latest", "", "index.docker.io/bitnami/redis:latest"}},
		{"registry.example.com:5000/team/app:v1", parsed{"registry.example.com:5000", "team/app", "v1", "", "registry.example.com:5000/team/app:v1"}},
		{"localhost:5000/app", parsed{"localhost:5000", "app", "latest", "", "localhost:5000/app:latest"}},
		{"[::1]:5000/app:v1", parsed{"[::1]:5000", "app", "v1", "", "[::1]:5000/app:v1"}},
		{"[fd00::1]/team/app", parsed{"[fd00::1]", "team/app", "latest", "", "[fd00::1]/team/app:latest"}},
		{"nginx@" + digestA, parsed{"index.docker.io", "library/nginx", "", digestA, "index.docker.io/library/nginx@" + digestA}},
		// The digest wins over the tag, as for the container runtime.
		{"nginx:1.25@" + digestA, parsed{"index.docker.io", "library/nginx", "", digestA, "index.docker.io/library/nginx@" + digestA}},
		{"registry.example.com:5000/app:v1@" + digestB, parsed{"registry.example.com:5000", "app", "", digestB, "registry.example.com:5000/app@" + digestB}},
		// distribution/reference (the kubelet's parser) accepts sha384 and sha512 digests.
		{"nginx@" + digest512, parsed{"index.docker.io", "library/nginx", "", digest512, "index.docker.io/library/nginx@" + digest512}},
		// A first component with an upper-case letter is a registry host, even without a dot
		// (distribution/reference splitDockerDomain): not a Docker Hub namespace.
		{"Foo/bar", parsed{"Foo", "bar", "latest", "", "Foo/bar:latest"}},
		// One-character repository components are valid in the distribution grammar.
		{"registry:5000/a", parsed{"registry:5000", "a", "latest", "", "registry:5000/a:latest"}},
		{"a", parsed{"index.docker.io", "library/a", "latest", "", "index.docker.io/library/a:latest"}},
		{"x/y:1", parsed{"index.docker.io", "x/y", "1", "", "index.docker.io/x/y:1"}},
		// localhost with a port is a registry on the node's loopback, resolved as any other.
		{"localhost:5000/team/app", parsed{"localhost:5000", "team/app", "latest", "", "localhost:5000/team/app:latest"}},
	} {
		t.Run(tc.image, func(t *testing.T) {
			ref := parseReference(tc.image)
			if ref.err != nil {
				t.Fatalf("parseReference(%q): %v", tc.image, ref.err)
			}
			got := parsed{ref.registry(), ref.repository(), ref.tag(), ref.digest(), ref.canonical}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestParseReferenceInvalid(t *testing.T) {
	for _, image := range []string{
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
	} {
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

// TestParseReferenceLocalImage: the kubelet and containerd read "localhost/name" as an image
// on the registry host "localhost" (distribution/reference: localhost is always a domain),
// the name podman, buildah and CRI-O give local builds; it is never index.docker.io/localhost/name.
func TestParseReferenceLocalImage(t *testing.T) {
	for _, image := range []string{"localhost/app", "localhost/team/app:v1", "localhost/app@" + digestA} {
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

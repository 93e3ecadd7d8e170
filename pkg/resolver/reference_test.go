package resolver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
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
	} {
		t.Run(tc.image, func(t *testing.T) {
			ref := parseReference(tc.image)
			if ref.err != nil {
				t.Fatalf("parseReference(%q): %v", tc.image, ref.err)
			}
			got := parsed{ref.registry, ref.repository, ref.tag, ref.digest, ref.canonical}
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

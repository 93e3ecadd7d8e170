//go:build linux

package resolver_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
	"github.com/archfilter/archfilter/pkg/resolver/transport"
)

// TestPlatforms resolves every image shape of the design's "Image platform pitfalls" on
// each registry, with the pod's pull secret, through the production stack.
func TestPlatforms(t *testing.T) {
	tests := []struct {
		name string
		// memoryOnly says why Distribution cannot hold this fixture; the case then runs on
		// the in-memory registry only.
		memoryOnly string
		// push pushes the fixture and returns the reference a pod would use and the digest
		// the answer must come from.
		push  func(f *registrytest.Fixtures) (image, digest string)
		want  outcome
		check func(t *testing.T, set platform.Set)
	}{
		{
			name: "OCI index",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Index("oci-index:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
			}),
			want: ok("linux/amd64", "linux/arm64"),
		},
		{
			name: "Docker manifest list, architectures normalised",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Index("docker-list:v1", registrytest.Docker, "linux/x86_64", "linux/aarch64", "linux/ppc64le")
			}),
			want: ok("linux/amd64", "linux/arm64", "linux/ppc64le"),
		},
		{
			name: "OCI single-arch image: platform from the config blob",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Image("oci-single:v1", registrytest.OCI, "linux/riscv64")
			}),
			want: ok("linux/riscv64"),
		},
		{
			name: "Docker single-arch image: platform from the config blob",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Image("docker-single:v1", registrytest.Docker, "linux/s390x")
			}),
			want: ok("linux/s390x"),
		},
		{
			name: "schema1: architecture from the manifest",
			// Distribution 2.8 answers MANIFEST_INVALID to schema1 pushes (they need a
			// libtrust signature it verifies, and it no longer accepts new ones).
			memoryOnly: "Distribution rejects schema1 pushes (MANIFEST_INVALID)",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Schema1("schema1:v1", "arm")
			}),
			want: ok("linux/arm/v7"),
		},
		{
			name: "buildx attestations: unknown/unknown entries ignored",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Attested("buildx:v1", "linux/amd64", "linux/arm64")
			}),
			want: ok("linux/amd64", "linux/arm64"),
			check: func(t *testing.T, set platform.Set) {
				if set.MatchesNode(platform.NodePlatform{OS: "unknown", Architecture: "unknown"}) {
					t.Error("an attestation entry counts as a platform")
				}
			},
		},
		{
			name: "nested index",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Nested("nested:v1", []string{"linux/amd64"}, []string{"linux/arm64", "linux/riscv64"})
			}),
			want: ok("linux/amd64", "linux/arm64", "linux/riscv64"),
		},
		{
			name: "artifact: Helm chart never constrains",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Artifact("helm:v1", registrytest.ArtifactHelm)
			}),
			want:  anyPlatform(),
			check: runsAnywhere,
		},
		{
			name: "artifact: empty config never constrains",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Artifact("empty-config:v1", registrytest.ArtifactEmptyConfig)
			}),
			want:  anyPlatform(),
			check: runsAnywhere,
		},
		{
			name: "artifact: signature artifactType never constrains",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Artifact("signature:v1", registrytest.ArtifactSignature)
			}),
			want:  anyPlatform(),
			check: runsAnywhere,
		},
		{
			name: "artifact: wasm module never constrains",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Artifact("wasm:v1", registrytest.ArtifactWasm)
			}),
			want:  anyPlatform(),
			check: runsAnywhere,
		},
		{
			name: "Windows images with os.version, two builds",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Index("windows:v1", registrytest.Docker, "windows/amd64:10.0.17763.1234", "windows/amd64:10.0.20348.2113")
			}),
			want: ok("windows/amd64:10.0.17763.1234", "windows/amd64:10.0.20348.2113"),
			check: func(t *testing.T, set platform.Set) {
				for _, tc := range []struct {
					node platform.NodePlatform
					want bool
				}{
					{platform.NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.17763"}, true},
					{platform.NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.20348"}, true},
					{platform.NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.19041"}, false},
					{platform.NodePlatform{OS: "linux", Architecture: "amd64"}, false},
				} {
					if got := set.MatchesNode(tc.node); got != tc.want {
						t.Errorf("MatchesNode(%s build %q) = %t, want %t", tc.node, tc.node.WindowsBuild, got, tc.want)
					}
				}
			},
		},
		{
			name: "Windows single-arch image: os.version from the config blob",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Image("windows-single:v1", registrytest.Docker, "windows/amd64:10.0.20348.2113")
			}),
			want: ok("windows/amd64:10.0.20348.2113"),
			check: func(t *testing.T, set platform.Set) {
				if set.MatchesNode(platform.NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.17763"}) {
					t.Error("a 10.0.20348 image matches a 10.0.17763 node")
				}
			},
		},
		{
			name: "arm variants: arm/v6, arm/v7, arm64/v8 normalised to arm64",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Index("arm:v1", registrytest.OCI, "linux/arm/v6", "linux/arm/v7", "linux/arm64/v8")
			}),
			want: ok("linux/arm/v6", "linux/arm/v7", "linux/arm64"),
			check: func(t *testing.T, set platform.Set) {
				// Node labels carry no variant: any arm variant matches an arm node.
				for _, arch := range []string{"arm", "arm64"} {
					if !set.MatchesNode(platform.NodePlatform{OS: "linux", Architecture: arch}) {
						t.Errorf("does not match a linux/%s node", arch)
					}
				}
			},
		},
		{
			name: "single-arch arm64/v8 image normalised to arm64",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Image("arm64-v8:v1", registrytest.Docker, "linux/arm64/v8")
			}),
			want: ok("linux/arm64"),
		},
		{
			name: "single-arch arm image without a variant normalised to arm/v7",
			push: pushed(func(f *registrytest.Fixtures) registrytest.Pushed {
				return f.Image("arm-bare:v1", registrytest.OCI, "linux/arm")
			}),
			want: ok("linux/arm/v7"),
		},
		{
			name: "tag+digest: the digest wins",
			push: func(f *registrytest.Fixtures) (string, string) {
				a := f.Index("tag-digest:a", registrytest.OCI, "linux/amd64")
				b := f.Index("tag-digest:b", registrytest.OCI, "linux/arm64")
				return a.Ref + "@" + b.Digest, b.Digest
			},
			want: ok("linux/arm64"),
		},
		{
			name: "tag+digest with a tag that no longer exists: the digest still answers",
			push: func(f *registrytest.Fixtures) (string, string) {
				p := f.Index("moved:v1", registrytest.OCI, "linux/ppc64le")
				return p.Ref + "-deleted@" + p.Digest, p.Digest
			},
			want: ok("linux/ppc64le"),
		},
		{
			name: "digest of a single-platform child of an index",
			push: func(f *registrytest.Fixtures) (string, string) {
				idx := f.Index("child:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
				return idx.ChildRef("linux/arm64"), idx.Children[1].Digest
			},
			want: ok("linux/arm64"),
		},
		{
			name: "digest of an index",
			push: func(f *registrytest.Fixtures) (string, string) {
				idx := f.Index("by-digest:v1", registrytest.Docker, "linux/amd64", "linux/s390x")
				return idx.DigestRef(), idx.Digest
			},
			want: ok("linux/amd64", "linux/s390x"),
		},
	}

	forEachRegistry(t, func(t *testing.T, reg *registry) {
		r := newResolver(t, transport.Options{}, resolver.Options{})
		creds := podSecretCredentials(t, reg.host)
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				if tc.memoryOnly != "" && reg.kind != "memory" {
					t.Skip("in-memory registry only: " + tc.memoryOnly)
				}
				_, ctx := ktesting.NewTestContext(t)
				image, digest := tc.push(reg.fixtures(t))
				req := resolver.Request{Image: image, Credentials: creds}
				res := r.Resolve(ctx, req)
				if diff := cmp.Diff(tc.want, outcomeOf(res)); diff != "" {
					t.Fatalf("Resolve(%s) (-want,+got):\n%s\nerr: %v", image, diff, res.Err)
				}
				if res.Digest != digest {
					t.Errorf("Resolve(%s).Digest = %s, want %s", image, res.Digest, digest)
				}
				if tc.check != nil {
					tc.check(t, res.Platforms)
				}
				cached, found := r.Lookup(req)
				if !found {
					t.Fatalf("Lookup(%s) after Resolve: not cached", image)
				}
				if diff := cmp.Diff(tc.want, outcomeOf(cached)); diff != "" {
					t.Errorf("Lookup(%s) (-want,+got):\n%s", image, diff)
				}
			})
		}
	})
}

// pushed adapts a builder returning registrytest.Pushed to a case's push: the pod uses the
// tag, and the answer comes from the pushed manifest's digest.
func pushed(push func(f *registrytest.Fixtures) registrytest.Pushed) func(f *registrytest.Fixtures) (string, string) {
	return func(f *registrytest.Fixtures) (string, string) {
		p := push(f)
		return p.Ref, p.Digest
	}
}

// runsAnywhere checks that an answer does not constrain placement at all.
func runsAnywhere(t *testing.T, set platform.Set) {
	t.Helper()
	for _, n := range []platform.NodePlatform{
		{OS: "linux", Architecture: "amd64"},
		{OS: "linux", Architecture: "s390x"},
		{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.17763"},
	} {
		if !set.MatchesNode(n) {
			t.Errorf("does not match a %s node", n)
		}
	}
}

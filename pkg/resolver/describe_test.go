package resolver

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// TestDescribe: every entry of an image's manifest tree with its own digest, attestations
// and artifacts marked as such, against the in-memory registry.
func TestDescribe(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)
	r := newTestResolver(t, Options{})

	attested := f.Attested("attested:v1", "linux/amd64", "linux/arm64")
	single := f.Image("single:v1", registrytest.Docker, "linux/s390x")
	helm := f.Artifact("helm:v1", registrytest.ArtifactHelm)
	nested := f.Nested("nested:v1", []string{"linux/amd64"}, []string{"linux/arm/v7"})

	type entry struct {
		Kind, Digest, Platform, Refers string
		FromIndex                      bool
	}
	summary := func(d Description) []entry {
		var out []entry
		for _, e := range d.Manifests {
			p := ""
			if e.Kind == ManifestImage {
				p = e.Platform.String()
			}
			out = append(out, entry{string(e.Kind), e.Digest, p, e.Refers, e.FromIndex})
		}
		return out
	}
	child := func(p registrytest.Pushed, i int) string { return p.Children[i].Digest }

	for _, tc := range []struct {
		name  string
		image registrytest.Pushed
		want  []entry
	}{
		{"attested index", attested, nil},
		// The platform of a single image is its config's.
		{"single image", single, []entry{{"image", single.Digest, "linux/s390x", "", false}}},
		{"helm chart", helm, []entry{{"artifact", helm.Digest, "", "", false}}},
		{"nested index", nested, []entry{
			{"image", child(nested, 0), "linux/amd64", "", true},
			{"image", child(nested, 1), "linux/arm/v7", "", true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := r.Describe(testContext(t), Request{Image: tc.image.Ref})
			if err != nil {
				t.Fatal(err)
			}
			if d.Digest != tc.image.Digest {
				t.Errorf("Digest = %s, want %s", d.Digest, tc.image.Digest)
			}
			got := summary(d)
			if tc.want == nil {
				// Each image entry followed by its attestation, which refers to it.
				for i, c := range tc.image.Children {
					tc.want = append(tc.want, entry{"image", c.Digest, c.Platform, "", true})
					if len(got) > 2*i+1 {
						tc.want = append(tc.want, entry{"attestation", got[2*i+1].Digest, "", c.Digest, false})
					}
				}
				if len(got) != 4 {
					t.Errorf("%d entries, want 2 images and 2 attestations: %+v", len(got), got)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Manifests (-want,+got):\n%s", diff)
			}
			res, ok := r.Lookup(Request{Image: tc.image.Ref})
			if !ok || res.Digest != d.Digest || res.Platforms.String() != d.Platforms.String() {
				t.Errorf("Lookup after Describe = %+v, %v; want the described answer cached", res, ok)
			}
		})
	}

	if _, err := r.Describe(testContext(t), Request{Image: m.Host() + "/missing:v1"}); ReasonOf(err) != ReasonNotFound {
		t.Errorf("Describe(missing) = %v, want NotFound", err)
	}
	if _, err := r.Describe(testContext(t), Request{Image: "UPPER/Case:v1:bad"}); ReasonOf(err) != ReasonInvalidReference {
		t.Errorf("Describe(invalid) = %v, want InvalidReference", err)
	}
}

package ociimage

import (
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/internal/registrytest"
)

func specWithSBOMs(platforms ...string) Spec {
	s := spec(platforms...)
	for i := range s.Binaries {
		s.Binaries[i].SBOM = []byte(`{"bomFormat":"CycloneDX","metadata":{"component":{"name":"` + s.Binaries[i].Platform.String() + `"}}}`)
	}
	return s
}

// pushWithSBOM pushes the index of s and its SBOM artifact as make image does
// (hack/image) and returns the index's digest reference.
func pushWithSBOM(t *testing.T, host string, s Spec) name.Digest {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	idx, err := Index(s)
	if err != nil {
		t.Fatal(err)
	}
	art, err := SBOMArtifact(idx, s)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(host + "/archfilter/archfilter-scheduler:v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx)); err != nil {
		t.Fatalf("pushing the index: %v", err)
	}
	artDigest, err := art.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag.Context().Digest(artDigest.String()), art, remote.WithContext(ctx)); err != nil {
		t.Fatalf("pushing the SBOM artifact: %v", err)
	}
	d, _ := idx.Digest()
	return tag.Context().Digest(d.String())
}

// checkSBOMs reads the SBOMs back as a user would: the index's referrers of
// the CycloneDX type, the artifact's layers, and the digests the index's
// entries name.
func checkSBOMs(t *testing.T, ref name.Digest, s Spec) {
	t.Helper()
	referrers, err := remote.Referrers(ref, remote.WithFilter("artifactType", string(CycloneDXMediaType)))
	if err != nil {
		t.Fatalf("listing the referrers of %s: %v", ref, err)
	}
	im, err := referrers.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("%s has %d CycloneDX referrers, want 1: %+v", ref, len(im.Manifests), im.Manifests)
	}
	if got := im.Manifests[0].ArtifactType; got != string(CycloneDXMediaType) {
		t.Errorf("referrer's artifactType = %q, want %q", got, CycloneDXMediaType)
	}
	art, err := remote.Image(ref.Context().Digest(im.Manifests[0].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := art.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject == nil || m.Subject.Digest.String() != ref.DigestStr() {
		t.Errorf("artifact's subject = %+v, want the index %s", m.Subject, ref.DigestStr())
	}
	got := map[string]string{}
	for _, l := range m.Layers {
		layer, err := art.LayerByDigest(l.Digest)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := layer.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		got[l.Annotations[PlatformAnnotation]] = string(b)
	}
	want := map[string]string{}
	for _, b := range s.Binaries {
		want[b.Platform.String()] = string(b.SBOM)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SBOMs read back by platform (-want,+got):\n%s", diff)
	}

	// Without the referrers: the index's entries name each SBOM's digest, a
	// blob of the same repository.
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	imf, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range imf.Manifests {
		h, err := v1.NewHash(d.Annotations[SBOMDigestAnnotation])
		if err != nil {
			t.Fatalf("%s: annotation %s: %v", d.Platform, SBOMDigestAnnotation, err)
		}
		blob, err := remote.Layer(ref.Context().Digest(h.String()))
		if err != nil {
			t.Fatal(err)
		}
		rc, err := blob.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != want[d.Platform.String()] {
			t.Errorf("%s: blob %s = %q, want its SBOM %q", d.Platform, h, b, want[d.Platform.String()])
		}
	}
}

func TestSBOMReferrers(t *testing.T) {
	s := specWithSBOMs(released...)
	t.Run("registry with the referrers API", func(t *testing.T) {
		reg := registrytest.NewMemory(t, registrytest.WithReferrersAPI())
		checkSBOMs(t, pushWithSBOM(t, reg.Host(), s), s)
	})
	t.Run("registry without it: the referrers tag schema", func(t *testing.T) {
		reg := registrytest.NewMemory(t)
		ref := pushWithSBOM(t, reg.Host(), s)
		checkSBOMs(t, ref, s)
		// The fallback is a tag of the repository, as the OCI distribution spec names it.
		if _, err := remote.Index(ref.Context().Tag("sha256-" + ref.DigestStr()[len("sha256:"):])); err != nil {
			t.Errorf("no referrers tag for %s: %v", ref, err)
		}
	})
}

// The SBOMs change the index (its entries name them) but not its
// reproducibility, and an SBOM artifact needs every platform's SBOM.
func TestSBOMArtifact(t *testing.T) {
	a, err := Index(specWithSBOMs(released...))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Index(specWithSBOMs(released...))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Index(spec(released...))
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	dp, _ := plain.Digest()
	if da != db {
		t.Errorf("two builds with the same SBOMs differ: %s, %s", da, db)
	}
	if da == dp {
		t.Errorf("the index with SBOMs has the digest of the one without (%s): the entries do not name them", da)
	}
	artA, err := SBOMArtifact(a, specWithSBOMs(released...))
	if err != nil {
		t.Fatal(err)
	}
	artB, err := SBOMArtifact(b, specWithSBOMs(released...))
	if err != nil {
		t.Fatal(err)
	}
	if x, y := digestOf(t, artA), digestOf(t, artB); x != y {
		t.Errorf("two SBOM artifacts of one build differ: %s, %s", x, y)
	}
	if _, err := SBOMArtifact(plain, spec(released...)); err == nil {
		t.Error("SBOMArtifact accepted binaries without SBOMs")
	}
}

func digestOf(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

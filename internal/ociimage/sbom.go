package ociimage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// CycloneDXMediaType is the media type of a CycloneDX JSON SBOM, and the
	// artifact type of the SBOM artifact that refers to an index.
	CycloneDXMediaType types.MediaType = "application/vnd.cyclonedx+json"
	// SBOMDigestAnnotation, on an index's entry for one platform, is the
	// digest of that platform's SBOM: a blob of the same repository, readable
	// from any registry (the SBOM artifact also lists it).
	SBOMDigestAnnotation = "io.archfilter.sbom.digest"
	// PlatformAnnotation, on a layer of the SBOM artifact, names the platform
	// whose binary that SBOM describes.
	PlatformAnnotation = "io.archfilter.platform"
)

// emptyConfig is the config blob of the SBOM artifact: the artifact has no
// configuration, its config descriptor carries the artifact type.
var emptyConfig = []byte("{}")

// sbomDescriptor is the descriptor of a platform's SBOM blob.
func sbomDescriptor(b Binary) (v1.Descriptor, error) {
	h, size, err := v1.SHA256(bytes.NewReader(b.SBOM))
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{
		MediaType: CycloneDXMediaType, Digest: h, Size: size,
		Annotations: map[string]string{
			PlatformAnnotation:               b.Platform.String(),
			"org.opencontainers.image.title": "sbom-" + platformFileName(b.Platform) + ".cdx.json",
		},
	}, nil
}

func platformFileName(p v1.Platform) string {
	s := p.OS + "-" + p.Architecture
	if p.Variant != "" {
		s += "-" + p.Variant
	}
	return s
}

// artifactManifest is an OCI 1.1 image manifest used for an artifact:
// artifactType and subject (ggcr's v1.Manifest has no artifactType).
type artifactManifest struct {
	SchemaVersion int64             `json:"schemaVersion"`
	MediaType     types.MediaType   `json:"mediaType"`
	ArtifactType  types.MediaType   `json:"artifactType"`
	Config        v1.Descriptor     `json:"config"`
	Layers        []v1.Descriptor   `json:"layers"`
	Subject       *v1.Descriptor    `json:"subject"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// SBOMArtifact is the artifact that attaches the SBOM of each platform's
// binary (Spec.Binaries[].SBOM, all required) to idx: an OCI image manifest
// of artifact type CycloneDXMediaType whose subject is idx, one layer per
// platform. Pushed beside idx, registries with the OCI 1.1 referrers API list
// it among idx's referrers; for the others go-containerregistry's remote.Write
// maintains the referrers tag schema's index (tag sha256-<index digest>),
// which remote.Referrers reads. Its config descriptor's media type is the
// artifact type too, so the tag schema's index carries it as well.
func SBOMArtifact(idx v1.ImageIndex, s Spec) (v1.Image, error) {
	mt, err := idx.MediaType()
	if err != nil {
		return nil, err
	}
	raw, err := idx.RawManifest()
	if err != nil {
		return nil, err
	}
	h, size, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	bins := append([]Binary(nil), s.Binaries...)
	sort.Slice(bins, func(i, j int) bool { return bins[i].Platform.String() < bins[j].Platform.String() })
	a := &artifact{blobs: map[v1.Hash]v1.Layer{}}
	ch, csize, err := v1.SHA256(bytes.NewReader(emptyConfig))
	if err != nil {
		return nil, err
	}
	m := artifactManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  CycloneDXMediaType,
		Config:        v1.Descriptor{MediaType: CycloneDXMediaType, Digest: ch, Size: csize},
		Subject:       &v1.Descriptor{MediaType: mt, Digest: h, Size: size},
		Annotations:   map[string]string{"org.opencontainers.image.created": s.Created.UTC().Format(time.RFC3339)},
	}
	for _, b := range bins {
		if len(b.SBOM) == 0 {
			return nil, fmt.Errorf("%s: no SBOM", b.Platform)
		}
		d, err := sbomDescriptor(b)
		if err != nil {
			return nil, err
		}
		m.Layers = append(m.Layers, d)
		a.blobs[d.Digest] = static.NewLayer(b.SBOM, CycloneDXMediaType)
	}
	if a.manifest, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return partial.CompressedToImage(a)
}

// artifact is a v1.Image (partial.CompressedImageCore) with a manifest of
// our own and static blobs.
type artifact struct {
	manifest []byte
	blobs    map[v1.Hash]v1.Layer
}

func (a *artifact) RawConfigFile() ([]byte, error)      { return emptyConfig, nil }
func (a *artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (a *artifact) RawManifest() ([]byte, error)        { return a.manifest, nil }
func (a *artifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if l, ok := a.blobs[h]; ok {
		return l, nil
	}
	return nil, fmt.Errorf("SBOM artifact has no blob %s", h)
}

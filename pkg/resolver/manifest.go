package resolver

import (
	"encoding/json"
	"mime"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/archfilter/archfilter/pkg/platform"
)

// Media types go-containerregistry has no constant for.
const (
	// ociArtifactManifest is the short-lived OCI 1.1 release-candidate artifact manifest:
	// it has blobs but no config, so it is never a runnable image.
	ociArtifactManifest = "application/vnd.oci.artifact.manifest.v1+json"

	// referenceTypeAnnotation marks buildx attestation entries in an index.
	referenceTypeAnnotation = "vnd.docker.reference.type"
)

// acceptHeader lists every manifest type the resolver understands, so that a registry
// never converts an index into one platform's manifest or a list into schema1.
var acceptHeader = strings.Join([]string{
	string(types.OCIImageIndex),
	string(types.DockerManifestList),
	string(types.OCIManifestSchema1),
	string(types.DockerManifestSchema2),
	string(types.DockerManifestSchema1Signed),
	string(types.DockerManifestSchema1),
}, ", ")

// wireManifest decodes only what platform resolution needs from any manifest shape; the
// layers, often the bulk of a manifest, are skipped by the decoder.
type wireManifest struct {
	SchemaVersion int              `json:"schemaVersion"`
	MediaType     string           `json:"mediaType"`
	ArtifactType  string           `json:"artifactType"`
	Config        *wireDescriptor  `json:"config"`
	Manifests     []wireDescriptor `json:"manifests"`
	// Schema1.
	Architecture string `json:"architecture"`
	History      []struct {
		V1Compatibility string `json:"v1Compatibility"`
	} `json:"history"`
}

type wireDescriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType"`
	Annotations  map[string]string `json:"annotations"`
	Platform     *wirePlatform     `json:"platform"`
}

// wirePlatform is both an index entry's platform and the platform fields of an image
// config, which use the same names.
type wirePlatform struct {
	OS           string   `json:"os"`
	Architecture string   `json:"architecture"`
	Variant      string   `json:"variant"`
	OSVersion    string   `json:"os.version"`
	OSFeatures   []string `json:"os.features"`
}

func (p *wirePlatform) platform() platform.Platform {
	return platform.Normalize(platform.Platform{
		OS:           p.OS,
		Architecture: p.Architecture,
		Variant:      p.Variant,
		OSVersion:    p.OSVersion,
		OSFeatures:   p.OSFeatures,
	})
}

// manifestKind is what a manifest is, whatever its Content-Type claimed.
type manifestKind int

const (
	kindUnknown manifestKind = iota
	kindIndex
	kindImage
	kindSchema1
	kindArtifact
)

func kindOfMediaType(mt string) manifestKind {
	switch types.MediaType(mt) {
	case types.OCIImageIndex, types.DockerManifestList:
		return kindIndex
	case types.OCIManifestSchema1, types.DockerManifestSchema2:
		return kindImage
	case types.DockerManifestSchema1, types.DockerManifestSchema1Signed:
		return kindSchema1
	case ociArtifactManifest:
		return kindArtifact
	}
	return kindUnknown
}

// classifyManifest decides what m is. A specific Content-Type is believed, then the
// manifest's own mediaType field, then its shape; registries that serve manifests as
// application/json, text/plain or application/octet-stream get the latter two. A
// declared kind that contradicts the shape (an "image" with manifests and no config) loses
// to the shape, since the shape is what the resolver must read.
func classifyManifest(contentType string, m *wireManifest) manifestKind {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = contentType
	}
	kind := kindOfMediaType(mt)
	if kind == kindUnknown {
		kind = kindOfMediaType(m.MediaType)
	}
	shape := kindUnknown
	switch {
	case m.SchemaVersion == 1:
		shape = kindSchema1
	case m.Manifests != nil && m.Config == nil:
		shape = kindIndex
	case m.Config != nil && m.Manifests == nil:
		shape = kindImage
	}
	if kind == kindArtifact {
		return kind
	}
	if kind == kindUnknown || (shape != kindUnknown && shape != kind) {
		return shape
	}
	return kind
}

func decodeManifest(body []byte) (*wireManifest, error) {
	var m wireManifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, invalidManifest("decoding manifest: %v", err)
	}
	return &m, nil
}

// isImageConfig reports whether a config media type belongs to a runnable container image.
// A missing one is given the benefit of the doubt: the config's own fields decide.
func isImageConfig(mt string) bool {
	switch types.MediaType(mt) {
	case "", types.OCIConfigJSON, types.DockerConfigJSON:
		return true
	}
	return false
}

// isArtifactManifest reports whether an image-shaped manifest is an OCI artifact or a
// data-only image (a Helm chart, a signature, an SBOM, a wasm module, an empty config):
// nothing the kubelet runs, so it must never constrain placement.
func isArtifactManifest(m *wireManifest) bool {
	if m.ArtifactType != "" && !isImageConfig(m.ArtifactType) {
		return true
	}
	return m.Config == nil || !isImageConfig(m.Config.MediaType)
}

// isAttestation reports whether an index entry is a buildx attestation (or another
// reference to a sibling entry) rather than a platform.
func isAttestation(d *wireDescriptor) bool {
	if d.Annotations[referenceTypeAnnotation] != "" {
		return true
	}
	return d.Platform != nil && d.Platform.OS == "unknown" && d.Platform.Architecture == "unknown"
}

// schema1Platform reads a schema1 manifest's architecture; the OS is in the first history
// entry's v1Compatibility JSON, and is linux when absent, as schema1 predates Windows.
func schema1Platform(m *wireManifest) (platform.Platform, bool) {
	if m.Architecture == "" {
		return platform.Platform{}, false
	}
	p := wirePlatform{OS: "linux", Architecture: m.Architecture}
	if len(m.History) > 0 {
		var compat struct {
			OS string `json:"os"`
		}
		if json.Unmarshal([]byte(m.History[0].V1Compatibility), &compat) == nil && compat.OS != "" {
			p.OS = compat.OS
		}
	}
	return p.platform(), true
}

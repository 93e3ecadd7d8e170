package resolver

import (
	"context"

	"github.com/archfilter/archfilter/pkg/platform"
)

// ManifestKind says what an entry of an image's manifest tree is.
type ManifestKind string

const (
	// ManifestImage is a runnable image for one platform.
	ManifestImage ManifestKind = "image"
	// ManifestAttestation is an index entry that describes a sibling entry (buildx
	// provenance or SBOM, unknown/unknown); it is not a platform.
	ManifestAttestation ManifestKind = "attestation"
	// ManifestArtifact is an OCI artifact or a data-only image (a Helm chart, a
	// signature, a wasm module): nothing a node runs, so it does not constrain.
	ManifestArtifact ManifestKind = "artifact"
)

// Manifest is one entry of an image's manifest tree, as Describe reports it.
type Manifest struct {
	Kind   ManifestKind `json:"kind"`
	Digest string       `json:"digest"`
	// Platform is set for ManifestImage.
	Platform platform.Platform `json:"platform,omitzero"`
	// ArtifactType is the artifact's type, or its config's media type, for
	// ManifestArtifact.
	ArtifactType string `json:"artifactType,omitempty"`
	// Refers is the digest of the entry an attestation describes.
	Refers string `json:"refers,omitempty"`
	// FromIndex: Platform is what an index entry claims, believed without reading the
	// entry's config (which may say otherwise). False when Platform was read from the
	// config itself: a single-platform image, or an index entry that names no platform.
	FromIndex bool `json:"fromIndex,omitempty"`
}

// Description is what Describe learned about an image: Resolve's answer and every entry
// of its manifest tree that the answer was read from.
type Description struct {
	// Digest is the manifest (index or image) the reference names.
	Digest    string
	Platforms platform.Set
	// Manifests lists the image entries with their own digests, then attestations and
	// artifacts, in the order the registry listed them. An entry whose platform an
	// index names is reported without being fetched, as Resolve believes it.
	Manifests []Manifest
}

// referenceDigestAnnotation names the entry a buildx attestation describes.
const referenceDigestAnnotation = "vnd.docker.reference.digest"

// Describe asks the registry for req's image, always over the network (the cache is not
// consulted, but the answer is stored in it), through the same endpoints, credentials,
// address guard and limits as Resolve, and reports each entry of the manifest tree. It is
// for people asking about one image (kubectl archfilter inspect), not for the scheduler.
func (r *Resolver) Describe(ctx context.Context, req Request) (Description, error) {
	ref := r.refs.get(req.Image)
	if ref.err != nil {
		return Description{}, ref.invalid
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.ResolveTimeout)
	defer cancel()
	c := &manifestCollector{}
	res := r.fetch(context.WithValue(ctx, manifestCollectorKey{}, c), req, ref)
	if res.Err != nil {
		return Description{}, res.Err
	}
	return Description{Digest: res.Digest, Platforms: res.Platforms, Manifests: c.manifests}, nil
}

// manifestCollector receives the entries one walk reads, when Describe asked for them.
type manifestCollector struct {
	manifests []Manifest
}

type manifestCollectorKey struct{}

func collectorFrom(ctx context.Context) *manifestCollector {
	c, _ := ctx.Value(manifestCollectorKey{}).(*manifestCollector)
	return c
}

// add records m; a nil collector (Resolve) records nothing.
func (c *manifestCollector) add(m Manifest) {
	if c != nil {
		c.manifests = append(c.manifests, m)
	}
}

// reset forgets what an earlier attempt (another endpoint or credential) recorded.
func (c *manifestCollector) reset() {
	if c != nil {
		c.manifests = c.manifests[:0]
	}
}

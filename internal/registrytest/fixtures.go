package registrytest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types and annotations fixtures use that go-containerregistry has no constant for.
const (
	HelmConfigMediaType  = "application/vnd.cncf.helm.config.v1+json"
	HelmChartMediaType   = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	EmptyConfigMediaType = "application/vnd.oci.empty.v1+json"
	WasmConfigMediaType  = "application/vnd.wasm.config.v0+json"
	CosignArtifactType   = "application/vnd.dev.cosign.artifact.sig.v1+json"
	InTotoMediaType      = "application/vnd.in-toto+json"

	// ReferenceTypeAnnotation marks buildx attestation entries in an index.
	ReferenceTypeAnnotation   = "vnd.docker.reference.type"
	ReferenceDigestAnnotation = "vnd.docker.reference.digest"
	AttestationManifest       = "attestation-manifest"

	// fixtureLabel makes every fixture's config, and so its digest, depend on the reference
	// it was built for: two fixtures never share a manifest by accident, and pushing the
	// same call twice gives the same digests.
	fixtureLabel = "org.archfilter.registrytest.fixture"
)

// Target is a registry fixtures push to, and the account they push as.
type Target struct {
	// Host is "host:port" as in image references.
	Host string
	// Username and Password authenticate pushes; empty means anonymous.
	Username, Password string
}

// Format chooses between the OCI and the Docker media types.
type Format int

const (
	OCI Format = iota
	Docker
)

func (f Format) String() string {
	if f == Docker {
		return "Docker"
	}
	return "OCI"
}

// ArtifactKind selects what Fixtures.Artifact pushes.
type ArtifactKind int

const (
	// ArtifactHelm is a Helm chart: config media type HelmConfigMediaType.
	ArtifactHelm ArtifactKind = iota
	// ArtifactEmptyConfig is an OCI 1.1 artifact with the empty config and no artifactType.
	ArtifactEmptyConfig
	// ArtifactSignature is an OCI 1.1 artifact with artifactType CosignArtifactType.
	ArtifactSignature
	// ArtifactWasm is a wasm module with config media type WasmConfigMediaType.
	ArtifactWasm
)

// Pushed describes what a fixture builder pushed.
type Pushed struct {
	// Ref is "HOST/repo:tag", the reference a pod would use.
	Ref string
	// Repository is "HOST/repo".
	Repository string
	// Digest and MediaType are those of the manifest Ref names.
	Digest    string
	MediaType string
	Size      int64
	// Children are an index's entries in order (without attestations), with the platform
	// spec they were built from.
	Children []Child
}

// Child is one entry of a pushed index.
type Child struct {
	Platform  string
	Digest    string
	MediaType string
}

// DigestRef returns "HOST/repo@sha256:…" for the pushed manifest.
func (p Pushed) DigestRef() string {
	return p.Repository + "@" + p.Digest
}

// ChildRef returns "HOST/repo@sha256:…" for the child built from platform spec, or "" if
// there is none.
func (p Pushed) ChildRef(spec string) string {
	for _, c := range p.Children {
		if c.Platform == spec {
			return p.Repository + "@" + c.Digest
		}
	}
	return ""
}

// Fixtures pushes test images to one registry. Each method fails the test on error.
type Fixtures struct {
	t   testing.TB
	tgt Target
}

// NewFixtures returns builders that push to tgt.
func NewFixtures(t testing.TB, tgt Target) *Fixtures {
	return &Fixtures{t: t, tgt: tgt}
}

func (f *Fixtures) auth() authn.Authenticator {
	if f.tgt.Username == "" {
		return authn.Anonymous
	}
	return &authn.Basic{Username: f.tgt.Username, Password: f.tgt.Password}
}

func (f *Fixtures) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func (f *Fixtures) remoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithAuth(f.auth()), remote.WithContext(ctx)}
}

// reference parses "repo:tag" (or "repo@digest") relative to the target.
func (f *Fixtures) reference(ref string) name.Reference {
	f.t.Helper()
	r, err := name.ParseReference(f.tgt.Host + "/" + ref)
	if err != nil {
		f.t.Fatalf("registrytest: bad fixture reference %q: %v", ref, err)
	}
	return r
}

func (f *Fixtures) pushed(ref name.Reference, m manifestLike) Pushed {
	d, _ := m.Digest()
	mt, _ := m.MediaType()
	size, _ := m.Size()
	return Pushed{
		Ref:        ref.Name(),
		Repository: ref.Context().Name(),
		Digest:     d.String(),
		MediaType:  string(mt),
		Size:       size,
	}
}

// Platform specs are "os/arch[/variant][:os.version]", for example "linux/arm/v7" or
// "windows/amd64:10.0.17763.1234". They are written into manifests as given, without
// normalisation, so "linux/aarch64" tests the resolver's normalisation.
func parseSpec(spec string) (v1.Platform, error) {
	s, osVersion, _ := strings.Cut(spec, ":")
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return v1.Platform{}, fmt.Errorf("registrytest: bad platform spec %q, want os/arch[/variant][:os.version]", spec)
	}
	p := v1.Platform{OS: parts[0], Architecture: parts[1], OSVersion: osVersion}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// image builds a layerless image whose config carries the platform of spec.
func (f *Fixtures) image(ref string, format Format, spec string) v1.Image {
	f.t.Helper()
	p, err := parseSpec(spec)
	if err != nil {
		f.t.Fatal(err)
	}
	cfg := &v1.ConfigFile{
		OS:           p.OS,
		Architecture: p.Architecture,
		Variant:      p.Variant,
		OSVersion:    p.OSVersion,
		RootFS:       v1.RootFS{Type: "layers"},
		Config:       v1.Config{Labels: map[string]string{fixtureLabel: ref + " " + spec}},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		f.t.Fatalf("registrytest: building image %s: %v", spec, err)
	}
	if format == OCI {
		img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
	}
	return img
}

func indexMediaType(format Format) types.MediaType {
	if format == Docker {
		return types.DockerManifestList
	}
	return types.OCIImageIndex
}

// manifestLike is what images and indexes have in common.
type manifestLike interface {
	Digest() (v1.Hash, error)
	MediaType() (types.MediaType, error)
	Size() (int64, error)
}

func childOf(spec string, m manifestLike) Child {
	d, _ := m.Digest()
	mt, _ := m.MediaType()
	return Child{Platform: spec, Digest: d.String(), MediaType: string(mt)}
}

// Image pushes a single-platform image: its platform is only in the config blob.
func (f *Fixtures) Image(ref string, format Format, spec string) Pushed {
	f.t.Helper()
	r := f.reference(ref)
	img := f.image(ref, format, spec)
	ctx, cancel := f.ctx()
	defer cancel()
	if err := remote.Write(r, img, f.remoteOptions(ctx)...); err != nil {
		f.t.Fatalf("registrytest: pushing %s: %v", r, err)
	}
	return f.pushed(r, img)
}

// indexOf builds an index of one image per spec, each entry carrying its platform.
func (f *Fixtures) indexOf(ref string, format Format, specs []string) (v1.ImageIndex, []Child) {
	f.t.Helper()
	idx := mutate.IndexMediaType(empty.Index, indexMediaType(format))
	var children []Child
	for _, spec := range specs {
		p, err := parseSpec(spec)
		if err != nil {
			f.t.Fatal(err)
		}
		img := f.image(ref, format, spec)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		children = append(children, childOf(spec, img))
	}
	return idx, children
}

func (f *Fixtures) writeIndex(r name.Reference, idx v1.ImageIndex) {
	f.t.Helper()
	ctx, cancel := f.ctx()
	defer cancel()
	if err := remote.WriteIndex(r, idx, f.remoteOptions(ctx)...); err != nil {
		f.t.Fatalf("registrytest: pushing index %s: %v", r, err)
	}
}

// Index pushes a multi-platform image: an OCI index or a Docker manifest list whose
// entries carry the platforms of specs (the children's configs carry them too).
func (f *Fixtures) Index(ref string, format Format, specs ...string) Pushed {
	f.t.Helper()
	r := f.reference(ref)
	idx, children := f.indexOf(ref, format, specs)
	f.writeIndex(r, idx)
	p := f.pushed(r, idx)
	p.Children = children
	return p
}

// Attested pushes an index the way docker buildx does with provenance: after each image
// entry comes an attestation manifest with platform unknown/unknown and the
// vnd.docker.reference.type annotation.
func (f *Fixtures) Attested(ref string, specs ...string) Pushed {
	f.t.Helper()
	r := f.reference(ref)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var children []Child
	for _, spec := range specs {
		p, err := parseSpec(spec)
		if err != nil {
			f.t.Fatal(err)
		}
		img := f.image(ref, OCI, spec)
		d, _ := img.Digest()
		children = append(children, childOf(spec, img))
		att := f.attestation(ref, spec)
		idx = mutate.AppendManifests(idx,
			mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}},
			mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
				Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"},
				Annotations: map[string]string{
					ReferenceTypeAnnotation:   AttestationManifest,
					ReferenceDigestAnnotation: d.String(),
				},
			}},
		)
	}
	f.writeIndex(r, idx)
	p := f.pushed(r, idx)
	p.Children = children
	return p
}

// attestation builds a buildx-style attestation manifest: an OCI image whose config says
// unknown/unknown and whose one layer is an in-toto statement.
func (f *Fixtures) attestation(ref, spec string) v1.Image {
	f.t.Helper()
	cfg := &v1.ConfigFile{OS: "unknown", Architecture: "unknown", RootFS: v1.RootFS{Type: "layers"},
		Config: v1.Config{Labels: map[string]string{fixtureLabel: ref + " attestation " + spec}}}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	stmt := static.NewLayer([]byte(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://slsa.dev/provenance/v0.2"}`), InTotoMediaType)
	img, err = mutate.Append(img, mutate.Addendum{Layer: stmt, MediaType: InTotoMediaType})
	if err != nil {
		f.t.Fatal(err)
	}
	return mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
}

// Nested pushes an index of indexes: one inner index per group of specs, listed in the outer
// index by descriptors without a platform.
func (f *Fixtures) Nested(ref string, groups ...[]string) Pushed {
	f.t.Helper()
	r := f.reference(ref)
	outer := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var children []Child
	for i, g := range groups {
		inner, innerChildren := f.indexOf(fmt.Sprintf("%s#%d", ref, i), OCI, g)
		outer = mutate.AppendManifests(outer, mutate.IndexAddendum{Add: inner})
		children = append(children, innerChildren...)
	}
	f.writeIndex(r, outer)
	p := f.pushed(r, outer)
	p.Children = children
	return p
}

// Sparse pushes an index listing present and missing, then deletes the children of missing,
// as a mirror that only copied some platforms serves it.
func (f *Fixtures) Sparse(ref string, present, missing []string) Pushed {
	f.t.Helper()
	p := f.Index(ref, OCI, append(append([]string(nil), present...), missing...)...)
	for _, c := range p.Children[len(present):] {
		f.Delete(p.Repository+"@"+c.Digest, true)
	}
	return p
}

// Delete removes the manifest ref ("HOST/repo@sha256:…" or "HOST/repo:tag"). With
// absolute false, ref is relative to the target ("repo:tag").
func (f *Fixtures) Delete(ref string, absolute bool) {
	f.t.Helper()
	var r name.Reference
	if absolute {
		var err error
		if r, err = name.ParseReference(ref); err != nil {
			f.t.Fatal(err)
		}
	} else {
		r = f.reference(ref)
	}
	ctx, cancel := f.ctx()
	defer cancel()
	if err := remote.Delete(r, f.remoteOptions(ctx)...); err != nil {
		f.t.Fatalf("registrytest: deleting %s: %v", r, err)
	}
}

// Schema1 pushes a Docker schema1 manifest (signed media type; the signature is not
// checked by anyone) whose only platform information is its architecture field.
func (f *Fixtures) Schema1(ref, architecture string) Pushed {
	f.t.Helper()
	r := f.reference(ref)
	compat, _ := json.Marshal(map[string]any{"architecture": architecture, "os": "linux", "id": hexOf(ref)})
	body, _ := json.MarshalIndent(map[string]any{
		"schemaVersion": 1,
		"name":          r.Context().RepositoryStr(),
		"tag":           r.Identifier(),
		"architecture":  architecture,
		"fsLayers":      []map[string]string{{"blobSum": "sha256:a3ed95caeb02ffe68cdd9fd84406680ae93d633cb16422d00e8a7c22955b46d4"}},
		"history":       []map[string]string{{"v1Compatibility": string(compat)}},
		"signatures":    []map[string]any{{"header": map[string]string{"alg": "ES256"}, "signature": "c2lnbmF0dXJl", "protected": "e30"}},
	}, "", "   ")
	return f.Raw(ref, string(types.DockerManifestSchema1Signed), body)
}

// Artifact pushes an OCI artifact that is not a runnable image.
func (f *Fixtures) Artifact(ref string, kind ArtifactKind) Pushed {
	f.t.Helper()
	r := f.reference(ref)
	var (
		cfgType, artifactType, layerType string
		cfg                              []byte
	)
	switch kind {
	case ArtifactHelm:
		cfgType, layerType = HelmConfigMediaType, HelmChartMediaType
		cfg = []byte(fmt.Sprintf(`{"apiVersion":"v2","name":%q,"version":"0.1.0"}`, r.Context().RepositoryStr()))
	case ArtifactEmptyConfig:
		cfgType, layerType, cfg = EmptyConfigMediaType, "application/vnd.example.data.v1.tar+gzip", []byte("{}")
	case ArtifactSignature:
		cfgType, artifactType, layerType, cfg = EmptyConfigMediaType, CosignArtifactType, "application/vnd.dev.cosign.simplesigning.v1+json", []byte("{}")
	case ArtifactWasm:
		cfgType, layerType = WasmConfigMediaType, "application/vnd.wasm.content.layer.v1+wasm"
		cfg = []byte(`{"created":"1970-01-01T00:00:00Z","architecture":"wasm","os":"wasip1"}`)
	default:
		f.t.Fatalf("registrytest: unknown artifact kind %d", kind)
	}
	layer := []byte("payload of " + ref)
	m := map[string]any{
		"schemaVersion": 2,
		"mediaType":     string(types.OCIManifestSchema1),
		"config":        f.Blob(r.Context().RepositoryStr(), cfgType, cfg),
		"layers":        []v1.Descriptor{f.Blob(r.Context().RepositoryStr(), layerType, layer)},
	}
	if artifactType != "" {
		m["artifactType"] = artifactType
	}
	body, _ := json.Marshal(m)
	return f.Raw(ref, string(types.OCIManifestSchema1), body)
}

// Blob uploads content to repo ("repo", relative to the target) and returns its descriptor.
func (f *Fixtures) Blob(repo, mediaType string, content []byte) v1.Descriptor {
	f.t.Helper()
	r, err := name.NewRepository(f.tgt.Host + "/" + repo)
	if err != nil {
		f.t.Fatal(err)
	}
	l := static.NewLayer(content, types.MediaType(mediaType))
	ctx, cancel := f.ctx()
	defer cancel()
	if err := remote.WriteLayer(r, l, f.remoteOptions(ctx)...); err != nil {
		f.t.Fatalf("registrytest: uploading blob to %s: %v", r, err)
	}
	d, _ := l.Digest()
	return v1.Descriptor{MediaType: types.MediaType(mediaType), Size: int64(len(content)), Digest: d}
}

// Oversized pushes an index of one linux/amd64 image padded with an annotation to at least
// size bytes.
func (f *Fixtures) Oversized(ref string, size int) Pushed {
	f.t.Helper()
	child := f.Image(ref+"-child", OCI, "linux/amd64")
	body, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     string(types.OCIImageIndex),
		"manifests": []map[string]any{{
			"mediaType": child.MediaType, "digest": child.Digest, "size": child.Size,
			"platform": map[string]string{"os": "linux", "architecture": "amd64"},
		}},
		"annotations": map[string]string{"padding": strings.Repeat("x", size)},
	})
	return f.rawIndexFor(ref, child, body)
}

// WideIndex pushes an index with n entries, all naming one image under distinct made-up
// platforms ("linux/arch0", "linux/arch1", …).
func (f *Fixtures) WideIndex(ref string, n int) Pushed {
	f.t.Helper()
	child := f.Image(ref+"-child", OCI, "linux/amd64")
	ms := make([]map[string]any, n)
	for i := range ms {
		ms[i] = map[string]any{
			"mediaType": child.MediaType, "digest": child.Digest, "size": child.Size,
			"platform": map[string]string{"os": "linux", "architecture": fmt.Sprintf("arch%d", i)},
		}
	}
	body, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": string(types.OCIImageIndex), "manifests": ms})
	return f.rawIndexFor(ref, child, body)
}

// rawIndexFor pushes body as an index into the repository of child, which it names.
func (f *Fixtures) rawIndexFor(ref string, child Pushed, body []byte) Pushed {
	f.t.Helper()
	r := f.reference(ref)
	if r.Context().Name() != child.Repository {
		f.t.Fatalf("registrytest: child %s is not in the repository of %s", child.Ref, r)
	}
	return f.Raw(ref, string(types.OCIImageIndex), body)
}

// Raw PUTs body as the manifest ref ("repo:tag" or "repo@digest") with Content-Type
// mediaType, exactly as given: wrong media types, schema1, hand-written JSON, garbage.
func (f *Fixtures) Raw(ref, mediaType string, body []byte) Pushed {
	f.t.Helper()
	r := f.reference(ref)
	ctx, cancel := f.ctx()
	defer cancel()
	tr, err := transport.NewWithContext(ctx, r.Context().Registry, f.auth(), http.DefaultTransport,
		[]string{r.Context().Scope(transport.PushScope)})
	if err != nil {
		f.t.Fatalf("registrytest: authenticating to push %s: %v", r, err)
	}
	u := fmt.Sprintf("%s://%s/v2/%s/manifests/%s", r.Context().Scheme(), r.Context().RegistryStr(), r.Context().RepositoryStr(), r.Identifier())
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mediaType)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		f.t.Fatalf("registrytest: pushing %s: %v", r, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		f.t.Fatalf("registrytest: pushing %s: HTTP %d: %s", r, resp.StatusCode, msg)
	}
	sum := sha256.Sum256(body)
	return Pushed{
		Ref:        r.Name(),
		Repository: r.Context().Name(),
		Digest:     "sha256:" + hex.EncodeToString(sum[:]),
		MediaType:  mediaType,
		Size:       int64(len(body)),
	}
}

// Manifest fetches the raw manifest ref ("repo:tag", relative to the target) and its media
// type, for tests that re-push it in another shape.
func (f *Fixtures) Manifest(ref string) ([]byte, string) {
	f.t.Helper()
	ctx, cancel := f.ctx()
	defer cancel()
	d, err := remote.Get(f.reference(ref), f.remoteOptions(ctx)...)
	if err != nil {
		f.t.Fatalf("registrytest: fetching %s: %v", ref, err)
	}
	return d.Manifest, string(d.MediaType)
}

func hexOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

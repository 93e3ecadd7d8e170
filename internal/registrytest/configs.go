package registrytest

import (
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Claim is one entry of an index that Fixtures.Mislabelled pushes: the platform spec
// the index entry claims, and the one its image's config names.
type Claim struct {
	Index, Config string
}

// Mislabelled pushes an OCI index whose entries claim Claim.Index while each image's
// config names Claim.Config, as a pipeline that pushed a build under the wrong platform
// leaves it (containerd 2.2 does not unpack such an entry). Children carry the claimed
// spec.
func (f *Fixtures) Mislabelled(ref string, claims ...Claim) Pushed {
	f.t.Helper()
	r := f.reference(ref)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var children []Child
	for _, c := range claims {
		p, err := parseSpec(c.Index)
		if err != nil {
			f.t.Fatal(err)
		}
		img := f.image(ref+" claims "+c.Index, OCI, c.Config)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		children = append(children, childOf(c.Index, img))
	}
	f.writeIndex(r, idx)
	p := f.pushed(r, idx)
	p.Children = children
	return p
}

// OversizedConfig pushes an OCI index of one entry claiming spec, whose image's config
// (naming spec too) is padded with a label to at least size bytes.
func (f *Fixtures) OversizedConfig(ref, spec string, size int) Pushed {
	f.t.Helper()
	r := f.reference(ref)
	p, err := parseSpec(spec)
	if err != nil {
		f.t.Fatal(err)
	}
	cfg := &v1.ConfigFile{
		OS:           p.OS,
		Architecture: p.Architecture,
		Variant:      p.Variant,
		RootFS:       v1.RootFS{Type: "layers"},
		Config:       v1.Config{Labels: map[string]string{fixtureLabel: ref + " " + spec, "padding": strings.Repeat("x", size)}},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	f.writeIndex(r, idx)
	pushed := f.pushed(r, idx)
	pushed.Children = []Child{childOf(spec, img)}
	return pushed
}

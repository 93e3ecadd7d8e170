package registrytest

import (
	"archive/tar"
	"bytes"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of a fixture layer: a regular file with Body, a directory, a
// symbolic or hard link, or a whiteout (a file named ".wh.NAME", or ".wh..wh..opq").
type File struct {
	Name     string
	Body     []byte
	Dir      bool
	Symlink  string
	Hardlink string
}

// Runnable is one platform of an image with files: the platform its manifest (and its
// index entry) claims, its config and its layers, the bottom one first.
type Runnable struct {
	Platform string
	Config   v1.Config
	Layers   [][]File
}

// tarOf writes files as an uncompressed tar archive.
func tarOf(files []File) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: 0o755, Typeflag: tar.TypeReg, Size: int64(len(f.Body))}
		switch {
		case f.Dir:
			h.Typeflag, h.Size = tar.TypeDir, 0
		case f.Symlink != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, f.Symlink, 0
		case f.Hardlink != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, f.Hardlink, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Size > 0 {
			if _, err := tw.Write(f.Body); err != nil {
				return nil, err
			}
		}
	}
	err := tw.Close()
	return buf.Bytes(), err
}

// runnable builds the OCI image of r: gzipped layers and a config with its platform.
func (f *Fixtures) runnable(ref string, r Runnable) v1.Image {
	f.t.Helper()
	p, err := parseSpec(r.Platform)
	if err != nil {
		f.t.Fatal(err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for i, files := range r.Layers {
		b, err := tarOf(files)
		if err != nil {
			f.t.Fatalf("registrytest: layer %d of %s %s: %v", i, ref, r.Platform, err)
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
			tarball.WithMediaType(types.OCILayer))
		if err != nil {
			f.t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			f.t.Fatal(err)
		}
	}
	cfgFile, err := img.ConfigFile()
	if err != nil {
		f.t.Fatal(err)
	}
	cfgFile = cfgFile.DeepCopy()
	cfgFile.OS, cfgFile.Architecture, cfgFile.Variant, cfgFile.OSVersion = p.OS, p.Architecture, p.Variant, p.OSVersion
	cfgFile.Config = r.Config
	if cfgFile.Config.Labels == nil {
		cfgFile.Config.Labels = map[string]string{}
	}
	cfgFile.Config.Labels[fixtureLabel] = ref + " " + r.Platform
	if img, err = mutate.ConfigFile(img, cfgFile); err != nil {
		f.t.Fatal(err)
	}
	return img
}

// RunnableImage pushes a single-platform image with files.
func (f *Fixtures) RunnableImage(ref string, r Runnable) Pushed {
	f.t.Helper()
	rf := f.reference(ref)
	img := f.runnable(ref, r)
	ctx, cancel := f.ctx()
	defer cancel()
	if err := remote.Write(rf, img, f.remoteOptions(ctx)...); err != nil {
		f.t.Fatalf("registrytest: pushing %s: %v", rf, err)
	}
	return f.pushed(rf, img)
}

// RunnableIndex pushes an OCI index of images with files, each entry carrying the
// platform its Runnable claims, whatever its binaries are.
func (f *Fixtures) RunnableIndex(ref string, rs ...Runnable) Pushed {
	f.t.Helper()
	rf := f.reference(ref)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var children []Child
	for _, r := range rs {
		p, err := parseSpec(r.Platform)
		if err != nil {
			f.t.Fatal(err)
		}
		img := f.runnable(ref, r)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		children = append(children, childOf(r.Platform, img))
	}
	f.writeIndex(rf, idx)
	p := f.pushed(rf, idx)
	p.Children = children
	return p
}

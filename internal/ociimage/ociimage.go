// Package ociimage builds archfilter's container images without a container
// engine: an OCI image index with one image per platform, each a static
// binary on a minimal root filesystem (CA bundle, passwd and group naming a
// non-root user, /tmp), byte-for-byte reproducible from the same inputs.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRootUID is the user and group the images run as, distroless's "nonroot".
const NonRootUID = 65532

// File is one regular file, or directory, of an image's filesystem.
type File struct {
	// Path is absolute, e.g. /usr/local/bin/archfilter-scheduler.
	Path string
	Mode int64
	Data []byte
	// Dir makes it a directory (Data is ignored).
	Dir bool
	// Owner is its user and group ID; 0 is root.
	Owner int
}

// Binary is the entrypoint of one platform's image.
type Binary struct {
	Platform v1.Platform
	File     File
	// SBOM is the CycloneDX JSON SBOM of File, optional. The index's entry
	// for the platform names its digest (SBOMDigestAnnotation), and
	// SBOMArtifact attaches it to the index.
	SBOM []byte
}

// Spec describes an image index.
type Spec struct {
	// Binaries are the index's images: one entrypoint file per platform.
	Binaries []Binary
	// CABundle is the PEM bundle installed as /etc/ssl/certs/ca-certificates.crt.
	// Empty leaves it out (and the image cannot verify any registry's TLS).
	CABundle []byte
	// Args are passed after the entrypoint by default (the image's Cmd).
	Args []string
	// Labels become the image configs' labels and the index's annotations
	// (org.opencontainers.image.* keys).
	Labels map[string]string
	// Created stamps the configs, histories and every file: the source's commit
	// time makes two builds of one commit identical.
	Created time.Time
}

// Index builds the image index Spec describes.
func Index(s Spec) (v1.ImageIndex, error) {
	if len(s.Binaries) == 0 {
		return nil, fmt.Errorf("no platforms to build")
	}
	base, err := layer(s.Created, baseFiles(s.CABundle))
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	bins := append([]Binary(nil), s.Binaries...)
	sort.Slice(bins, func(i, j int) bool { return bins[i].Platform.String() < bins[j].Platform.String() })

	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, b := range bins {
		if i > 0 && b.Platform.String() == bins[i-1].Platform.String() {
			return nil, fmt.Errorf("platform %s given twice", b.Platform)
		}
		p := b.Platform
		img, err := image(s, p, b.File, base)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		desc := v1.Descriptor{Platform: &p}
		if len(b.SBOM) > 0 {
			d, err := sbomDescriptor(b)
			if err != nil {
				return nil, err
			}
			desc.Annotations = map[string]string{SBOMDigestAnnotation: d.Digest.String()}
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: desc})
	}
	if len(s.Labels) > 0 {
		idx = mutate.Annotations(idx, s.Labels).(v1.ImageIndex)
	}
	return idx, nil
}

func image(s Spec, p v1.Platform, bin File, base v1.Layer) (v1.Image, error) {
	top, err := layer(s.Created, []File{bin})
	if err != nil {
		return nil, fmt.Errorf("binary layer: %w", err)
	}
	created := v1.Time{Time: s.Created.UTC()}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "archfilter ociimage: CA bundle, passwd, group, /tmp"}},
		mutate.Addendum{Layer: top, History: v1.History{Created: created, CreatedBy: "archfilter ociimage: " + bin.Path}},
	)
	if err != nil {
		return nil, err
	}
	return EditConfig(img, func(cf *v1.ConfigFile) {
		cf.Created = created
		SetPlatform(cf, p)
		cf.Config = v1.Config{
			Entrypoint: []string{bin.Path},
			Cmd:        s.Args,
			User:       fmt.Sprintf("%d:%d", NonRootUID, NonRootUID),
			WorkingDir: "/",
			Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
			Labels:     s.Labels,
		}
	})
}

// EditConfig returns img with its config file changed by edit (on a copy).
func EditConfig(img v1.Image, edit func(*v1.ConfigFile)) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	edit(cf)
	return mutate.ConfigFile(img, cf)
}

// SetPlatform makes a config name platform p, as runtimes and resolvers read it.
func SetPlatform(cf *v1.ConfigFile, p v1.Platform) {
	cf.OS, cf.Architecture, cf.Variant, cf.OSVersion = p.OS, p.Architecture, p.Variant, p.OSVersion
}

// baseFiles is the filesystem every platform shares.
func baseFiles(caBundle []byte) []File {
	uid := fmt.Sprint(NonRootUID)
	fs := []File{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:" + uid + ":" + uid + ":nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:" + uid + ":\n")},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")},
	}
	if len(caBundle) > 0 {
		fs = append(fs, File{Path: "/etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Data: caBundle})
	}
	return append(fs,
		File{Path: "/tmp", Dir: true, Mode: 0o1777},
		File{Path: "/home/nonroot", Dir: true, Mode: 0o700, Owner: NonRootUID},
	)
}

// layer writes files, and the directories above them, as a tar layer with
// fixed owners and times so that its digest depends on the content only.
func layer(mtime time.Time, files []File) (v1.Layer, error) {
	entries := map[string]File{}
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("path %q is not absolute and clean", f.Path)
		}
		entries[f.Path] = f
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = File{Path: d, Dir: true, Mode: 0o755}
			}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		f := entries[n]
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     strings.TrimPrefix(f.Path, "/"),
			Mode:     f.Mode,
			Size:     int64(len(f.Data)),
			Uid:      f.Owner,
			Gid:      f.Owner,
			ModTime:  mtime.UTC().Truncate(time.Second),
			Format:   tar.FormatPAX,
		}
		if f.Dir {
			h.Typeflag, h.Name, h.Size = tar.TypeDir, h.Name+"/", 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if !f.Dir {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

package ociimage

import (
	"archive/tar"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/resolver"
)

const entrypoint = "/usr/local/bin/archfilter-scheduler"

var created = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// spec has a distinct fake binary per platform, as a cross-compiled build would.
func spec(platforms ...string) Spec {
	s := Spec{
		CABundle: []byte("-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"),
		Labels:   map[string]string{"org.opencontainers.image.version": "v1.2.3", "org.opencontainers.image.licenses": "Apache-2.0"},
		Created:  created,
	}
	for _, p := range platforms {
		pl, err := v1.ParsePlatform(p)
		if err != nil {
			panic(err)
		}
		s.Binaries = append(s.Binaries, Binary{Platform: *pl, File: File{Path: entrypoint, Mode: 0o755, Data: []byte("binary for " + p)}})
	}
	return s
}

var released = []string{"linux/amd64", "linux/arm64", "linux/ppc64le", "linux/s390x"}

// The pushed index is what archfilter itself reads: its own resolver sees the
// four platforms the release names.
func TestIndexResolvesToItsPlatforms(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	reg := registrytest.NewMemory(t)
	idx, err := Index(spec(released...))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(reg.Host() + "/archfilter/archfilter-scheduler:v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}

	r, err := resolver.New(resolver.Options{ResolveTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res := r.Resolve(ctx, resolver.Request{Image: ref.String()})
	if res.Err != nil {
		t.Fatalf("resolving %s: %v", ref, res.Err)
	}
	var got []string
	for _, p := range res.Platforms.Platforms() {
		got = append(got, p.String())
	}
	if diff := cmp.Diff(released, got); diff != "" {
		t.Errorf("platforms (-want,+got):\n%s", diff)
	}
	digest, _ := idx.Digest()
	if res.Digest != digest.String() {
		t.Errorf("resolver read digest %s, built %s", res.Digest, digest)
	}
}

// Each platform's image runs its own binary as the non-root user, with the
// CA bundle and the user database a Go binary needs, and the labels.
func TestImageContents(t *testing.T) {
	idx, err := Index(spec(released...))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("v1.2.3", im.Annotations["org.opencontainers.image.version"]); diff != "" {
		t.Errorf("index annotation (-want,+got):\n%s", diff)
	}
	if len(im.Manifests) != len(released) {
		t.Fatalf("%d manifests, want %d", len(im.Manifests), len(released))
	}
	for _, d := range im.Manifests {
		p := d.Platform.String()
		t.Run(p, func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if got := (v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}).String(); got != p {
				t.Errorf("config platform %s, index says %s", got, p)
			}
			if diff := cmp.Diff([]string{entrypoint}, cf.Config.Entrypoint); diff != "" {
				t.Errorf("entrypoint (-want,+got):\n%s", diff)
			}
			if cf.Config.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532", cf.Config.User)
			}
			if cf.Config.Labels["org.opencontainers.image.licenses"] != "Apache-2.0" {
				t.Errorf("labels %v lack the licence", cf.Config.Labels)
			}
			if !cf.Created.Time.Equal(created) {
				t.Errorf("created %v, want %v", cf.Created.Time, created)
			}
			files := extract(t, img)
			if got := files[strings.TrimPrefix(entrypoint, "/")]; got.data != "binary for "+p || got.mode != 0o755 {
				t.Errorf("entrypoint holds %q mode %o, want this platform's binary, 0755", got.data, got.mode)
			}
			if !strings.Contains(files["etc/passwd"].data, "nonroot:x:65532:65532:") {
				t.Errorf("/etc/passwd lacks the nonroot user:\n%s", files["etc/passwd"].data)
			}
			if !strings.Contains(files["etc/ssl/certs/ca-certificates.crt"].data, "BEGIN CERTIFICATE") {
				t.Error("no CA bundle")
			}
			if tmp := files["tmp"]; tmp.mode != 0o1777 {
				t.Errorf("/tmp mode %o, want 1777", tmp.mode)
			}
			for n, f := range files {
				if !f.mtime.Equal(created) {
					t.Errorf("%s has mtime %v, want %v", n, f.mtime, created)
				}
			}
		})
	}
}

// Two builds from the same inputs are the same image; a change of any input
// is a different one.
func TestIndexIsReproducible(t *testing.T) {
	digest := func(s Spec) string {
		t.Helper()
		idx, err := Index(s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	first := digest(spec(released...))
	reordered := spec(released...)
	reordered.Binaries[0], reordered.Binaries[3] = reordered.Binaries[3], reordered.Binaries[0]
	if got := digest(reordered); got != first {
		t.Errorf("same inputs in another order gave %s, want %s", got, first)
	}
	later := spec(released...)
	later.Created = created.Add(time.Second)
	newBinary := spec(released...)
	newBinary.Binaries[1].File.Data = []byte("rebuilt")
	for name, s := range map[string]Spec{"created": later, "binary": newBinary} {
		if digest(s) == first {
			t.Errorf("changing %s kept digest %s", name, first)
		}
	}
}

func TestIndexRejects(t *testing.T) {
	twice := spec("linux/amd64", "linux/amd64")
	relative := spec("linux/amd64")
	relative.Binaries[0].File.Path = "bin/scheduler"
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"no binaries", Spec{Created: created}, "no platforms"},
		{"a platform twice", twice, "linux/amd64 given twice"},
		{"relative path", relative, `"bin/scheduler" is not absolute`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Index(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

type file struct {
	data  string
	mode  int64
	mtime time.Time
}

func extract(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]file{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = file{data: string(b), mode: h.Mode, mtime: h.ModTime.UTC()}
	}
}

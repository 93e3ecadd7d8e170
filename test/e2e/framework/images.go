package framework

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/internal/ociimage"
	"github.com/archfilter/archfilter/pkg/platform"
)

// Registry is where images are pushed and how pods name them. On KWOK both
// hosts are 127.0.0.1:port; on kind the test pushes to the host port and
// the cluster pulls through the registry container's name on the kind network.
type Registry struct {
	PushHost string // host[:port] the test process pushes to
	PullHost string // host[:port] in pod image references; PushHost when empty
	Username string // basic auth, empty for an anonymous registry
	Password string
}

func (r Registry) pullHost() string {
	if r.PullHost != "" {
		return r.PullHost
	}
	return r.PushHost
}

// Image is a fixture image: its repository and the platforms it is built for.
type Image struct {
	// Name is the repository under the registry ("demo/amd64-only").
	Name string
	Tag  string
	// Platforms of the image. One platform and Index false gives a plain image
	// manifest (the platform only in its config), as single-arch builds push.
	Platforms []ggcrv1.Platform
	Index     bool
	// Private images go to the registry that needs credentials.
	Private bool
	// About says in a few words what the image stands for.
	About string
}

// PlatformStrings returns the image platforms as pkg/platform prints them
// ("linux/arm64", not the "linux/arm64/v8" an index may say, as kubectl
// archfilter inspect prints them), a Windows os.version after it in
// parentheses: "windows/amd64 (os.version 10.0.17763.7009)".
func (im Image) PlatformStrings() []string {
	out := make([]string, len(im.Platforms))
	for i, p := range im.Platforms {
		s := canonical(p).String()
		if p.OSVersion != "" {
			s += " (os.version " + p.OSVersion + ")"
		}
		out[i] = s
	}
	return out
}

// PlatformSet returns the image platforms as one platform.Set: what a
// registry client that reads the image learns, normalised.
func (im Image) PlatformSet() platform.Set {
	ps := make([]platform.Platform, len(im.Platforms))
	for i, p := range im.Platforms {
		ps[i] = canonical(p)
	}
	return platform.NewSet(ps...)
}

func canonical(p ggcrv1.Platform) platform.Platform {
	return platform.Normalize(platform.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant, OSVersion: p.OSVersion})
}

// RunsOn reports whether one of the image's platforms matches the node's
// kubernetes.io/os and kubernetes.io/arch labels, and for Windows its
// node.kubernetes.io/windows-build (the os.version's first three parts).
func (im Image) RunsOn(n *v1.Node) bool {
	for _, p := range im.Platforms {
		if p.OS != n.Labels[LabelOS] || p.Architecture != n.Labels[LabelArch] {
			continue
		}
		if b := n.Labels[LabelWindowsBuild]; p.OS == "windows" && b != "" && p.OSVersion != "" &&
			p.OSVersion != b && !strings.HasPrefix(p.OSVersion, b+".") {
			continue
		}
		return true
	}
	return false
}

func linux(arch string) ggcrv1.Platform { return ggcrv1.Platform{OS: "linux", Architecture: arch} }

// Fixture images, one per situation the plugin has to get right.
var (
	ImageMultiArch = Image{Name: "demo/multiarch", Tag: "v1", Index: true, About: "index: linux/amd64, arm64, ppc64le, s390x",
		Platforms: []ggcrv1.Platform{linux("amd64"), {OS: "linux", Architecture: "arm64", Variant: "v8"}, linux("ppc64le"), linux("s390x")}}
	ImageAMD64Only = Image{Name: "demo/amd64-only", Tag: "v1", About: "plain manifest, linux/amd64",
		Platforms: []ggcrv1.Platform{linux("amd64")}}
	ImageARM64Only = Image{Name: "demo/arm64-only", Tag: "v1", Index: true, About: "index with one entry, linux/arm64 (variant v8)",
		Platforms: []ggcrv1.Platform{{OS: "linux", Architecture: "arm64", Variant: "v8"}}}
	ImageS390XOnly = Image{Name: "demo/s390x-only", Tag: "v1", About: "plain manifest, linux/s390x",
		Platforms: []ggcrv1.Platform{linux("s390x")}}
	ImageWindows = Image{Name: "demo/windows-only", Tag: "ltsc2019", Index: true, About: "index: windows/amd64 (os.version 10.0.17763.7009)",
		Platforms: []ggcrv1.Platform{{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.7009"}}}
	ImageRISCV64Only = Image{Name: "demo/riscv64-only", Tag: "v1", Index: true, About: "index: linux/riscv64 only, fits no node",
		Platforms: []ggcrv1.Platform{linux("riscv64")}}
	ImagePrivate = Image{Name: "demo/private", Tag: "v1", Index: true, Private: true, About: "private (htpasswd) index: linux/arm64, s390x",
		Platforms: []ggcrv1.Platform{{OS: "linux", Architecture: "arm64", Variant: "v8"}, linux("s390x")}}
)

// AllImages lists every fixture image.
var AllImages = []Image{ImageMultiArch, ImageAMD64Only, ImageARM64Only, ImageS390XOnly, ImageWindows, ImageRISCV64Only, ImagePrivate}

// Ref returns the reference pods use for im.
func (im Image) Ref(public, private Registry) string {
	r := public
	if im.Private {
		r = private
	}
	return r.pullHost() + "/" + im.Name + ":" + im.Tag
}

// Push builds im (deterministically: the same fixture always has the same
// digest, so pushing twice is a no-op) and pushes it to r. It returns the
// pushed manifest's digest.
func Push(ctx context.Context, r Registry, im Image) (string, error) {
	ref, err := name.ParseReference(r.PushHost+"/"+im.Name+":"+im.Tag, name.Insecure)
	if err != nil {
		return "", err
	}
	auth := authn.Anonymous
	if r.Username != "" {
		auth = &authn.Basic{Username: r.Username, Password: r.Password}
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth)}

	if !im.Index {
		if len(im.Platforms) != 1 {
			return "", fmt.Errorf("image %s: a plain manifest has exactly one platform", im.Name)
		}
		img, err := platformImage(im.Name, im.Platforms[0])
		if err != nil {
			return "", err
		}
		if err := remote.Write(ref, img, opts...); err != nil {
			return "", fmt.Errorf("pushing %s: %w", ref, err)
		}
		d, err := img.Digest()
		return d.String(), err
	}
	// The multi-arch image is a Docker manifest list, the others OCI indexes:
	// registries serve both.
	var idx ggcrv1.ImageIndex = empty.Index
	if len(im.Platforms) > 1 {
		idx = mutate.IndexMediaType(idx, types.DockerManifestList)
	}
	for _, p := range im.Platforms {
		img, err := platformImage(im.Name, p)
		if err != nil {
			return "", err
		}
		p := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: ggcrv1.Descriptor{Platform: &p}})
	}
	if err := remote.WriteIndex(ref, idx, opts...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := idx.Digest()
	return d.String(), err
}

// platformImage is a small random image, seeded by repository and platform,
// whose config names the platform.
func platformImage(repo string, p ggcrv1.Platform) (ggcrv1.Image, error) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%s/%s/%s|%s", repo, p.OS, p.Architecture, p.Variant, p.OSVersion)
	img, err := random.Image(256, 1, random.WithSource(rand.NewSource(int64(h.Sum64()))))
	if err != nil {
		return nil, err
	}
	return ociimage.EditConfig(img, func(cf *ggcrv1.ConfigFile) { ociimage.SetPlatform(cf, p) })
}

// Seed pushes every image in images to its registry.
func Seed(ctx context.Context, public, private Registry, images []Image) error {
	for _, im := range images {
		r := public
		if im.Private {
			r = private
		}
		if _, err := Push(ctx, r, im); err != nil {
			return err
		}
	}
	return nil
}

// DockerConfigJSON returns the .dockerconfigjson of a pull secret for r.
func DockerConfigJSON(r Registry) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{
		r.pullHost(): map[string]string{"username": r.Username, "password": r.Password, "auth": auth},
	}})
	return b
}

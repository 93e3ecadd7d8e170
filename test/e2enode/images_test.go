package e2enode

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/archfilter/archfilter/internal/ociimage"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// program is a small static Go main of ./images, built into an image.
type program struct {
	// Pkg is the main package under ./images ("hello").
	Pkg string
	// Platforms it is built for (linux only).
	Platforms []string
	// Plain pushes a single image manifest instead of an index: what a
	// single-platform build pushes, and what containerd runs on any node
	// without looking at its platform. Exactly one platform.
	Plain bool
	// Lies maps a platform to the architecture its binary is really built
	// for: the image's index and config claim the platform, its binary is
	// another's (the kernel refuses it with exec format error).
	Lies map[string]string
}

// pushProgram cross-compiles p for each platform, builds the images with
// internal/ociimage (the builder of `make image`) and pushes them to ref. It
// returns ref@digest.
func pushProgram(ctx context.Context, p program, ref string, caFile, workDir string) (string, error) {
	var bins []ociimage.Binary
	for _, arch := range p.Platforms {
		out := filepath.Join(workDir, p.Pkg+"-"+arch)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./images/"+p.Pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+cmp.Or(p.Lies[arch], arch))
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s for linux/%s: %v\n%s", p.Pkg, arch, err, b)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			return "", err
		}
		bins = append(bins, ociimage.Binary{
			Platform: ggcrv1.Platform{OS: "linux", Architecture: arch},
			File:     ociimage.File{Path: "/usr/local/bin/" + p.Pkg, Mode: 0o755, Data: data},
		})
	}
	idx, err := ociimage.Index(ociimage.Spec{
		Binaries: bins,
		Labels:   map[string]string{"org.opencontainers.image.title": p.Pkg},
		Created:  time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	})
	if err != nil {
		return "", err
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", err
	}
	opts, err := registryOptions(ctx, caFile)
	if err != nil {
		return "", err
	}
	if !p.Plain {
		if err := remote.WriteIndex(r, idx, opts...); err != nil {
			return "", fmt.Errorf("pushing %s: %w", ref, err)
		}
		d, err := idx.Digest()
		return r.Context().Digest(d.String()).String(), err
	}
	if len(p.Platforms) != 1 {
		return "", fmt.Errorf("%s: a plain manifest has one platform", p.Pkg)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return "", err
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return "", err
	}
	if err := remote.Write(r, img, opts...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	return r.Context().Digest(d.String()).String(), err
}

// resolvedPlatforms is what archfilter's resolver says the image ref runs on
// (sorted), trusting the local registry's CA.
func resolvedPlatforms(ctx context.Context, ref, caFile string) ([]string, error) {
	tr, err := registryTransport(caFile)
	if err != nil {
		return nil, err
	}
	r, err := resolver.New(resolver.Options{Transport: tr, ResolveTimeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	res := r.Resolve(ctx, resolver.Request{Image: ref})
	if res.Err != nil {
		return nil, res.Err
	}
	var ps []string
	for _, p := range res.Platforms.Platforms() {
		ps = append(ps, p.String())
	}
	slices.Sort(ps)
	return ps, nil
}

// registryOptions trusts the local registry's CA, and nothing else.
func registryOptions(ctx context.Context, caFile string) ([]remote.Option, error) {
	tr, err := registryTransport(caFile)
	if err != nil {
		return nil, err
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithTransport(tr)}, nil
}

// registryTransport trusts the local registry's CA, and nothing else.
func registryTransport(caFile string) (*http.Transport, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate", caFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr, nil
}

// platformsOf is what the table says an image runs on.
func platformsOf(p program) string {
	var ps []string
	for _, a := range p.Platforms {
		ps = append(ps, "linux/"+a)
	}
	s := strings.Join(ps, ",")
	if p.Plain {
		s += " (plain manifest)"
	}
	return s
}

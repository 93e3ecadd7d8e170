// Command image builds archfilter's multi-platform OCI image index from
// cross-compiled binaries (internal/ociimage) and pushes it to a registry, or
// writes it as an OCI layout. No container engine is involved. `make image`
// runs it; see docs/development.md, "Container images".
//
//	go run ./hack/image --image REGISTRY/NAME:TAG \
//	    --binary linux/amd64=PATH --binary linux/arm64=PATH ... \
//	    --sbom linux/amd64=PATH.cdx.json --sbom linux/arm64=PATH.cdx.json ... \
//	    --label org.opencontainers.image.version=v1.2.3 --created 2026-11-24T10:00:00Z
//
// With --sbom (every platform's, or none), each index entry names its SBOM's
// digest and an SBOM artifact referring to the index is pushed beside it
// (internal/ociimage.SBOMArtifact).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"debug/buildinfo"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/archfilter/archfilter/internal/ociimage"
)

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var binaries, labels, sboms listFlag
	image := fs.String("image", "", "push the index to this reference (REGISTRY/NAME:TAG)")
	layoutDir := fs.String("layout", "", "also write the index to this OCI layout directory")
	entrypoint := fs.String("entrypoint", "/usr/local/bin/archfilter-scheduler", "where each binary is installed; the image's entrypoint")
	created := fs.String("created", "", "creation time of the image and its files, RFC 3339 (the commit's time makes builds reproducible; required)")
	caBundle := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle installed in the image; empty for none")
	registryCA := fs.String("registry-ca", "", "PEM CA that signs the target registry's certificate (for a local registry)")
	digestFile := fs.String("digest-file", "", "write REFERENCE@DIGEST of the pushed index here")
	fs.Var(&binaries, "binary", "OS/ARCH[/VARIANT]=PATH of one platform's binary (repeat per platform)")
	fs.Var(&labels, "label", "KEY=VALUE label of every image and annotation of the index (repeatable)")
	fs.Var(&sboms, "sbom", "OS/ARCH[/VARIANT]=PATH of one platform's CycloneDX SBOM (repeat per platform)")
	sbomDigestFile := fs.String("sbom-digest-file", "", "write REFERENCE@DIGEST of the pushed SBOM artifact here")
	goVersion := fs.String("go-version", "", "refuse a --binary that Go's build information says was built with another toolchain (e.g. go1.27.3; image.sh passes GOTOOLCHAIN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *image == "" && *layoutDir == "" {
		return fmt.Errorf("nothing to do: give --image, --layout or both")
	}
	spec, err := specFrom(binaries, labels, *entrypoint, *created, *caBundle)
	if err != nil {
		return err
	}
	if *goVersion != "" {
		if err := checkGoVersion(binaries, *goVersion); err != nil {
			return err
		}
	}
	if err := addSBOMs(&spec, sboms); err != nil {
		return err
	}
	idx, err := ociimage.Index(spec)
	if err != nil {
		return err
	}
	var sbomArtifact v1.Image
	if len(sboms) > 0 {
		if sbomArtifact, err = ociimage.SBOMArtifact(idx, spec); err != nil {
			return err
		}
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if *layoutDir != "" {
		p, err := layout.Write(*layoutDir, idx)
		if err != nil {
			return fmt.Errorf("writing layout %s: %w", *layoutDir, err)
		}
		if sbomArtifact != nil {
			if err := p.AppendImage(sbomArtifact); err != nil {
				return fmt.Errorf("writing the SBOM artifact to layout %s: %w", *layoutDir, err)
			}
		}
		fmt.Fprintf(os.Stderr, "wrote %s to OCI layout %s\n", digest, *layoutDir)
	}
	if *image == "" {
		return nil
	}
	ref, err := name.NewTag(*image)
	if err != nil {
		return fmt.Errorf("--image %q: %w", *image, err)
	}
	tr, err := transport(*registryCA)
	if err != nil {
		return err
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(tr), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if err := remote.WriteIndex(ref, idx, opts...); err != nil {
		return fmt.Errorf("pushing %s (credentials: docker config of this user): %w", ref, err)
	}
	pushed := ref.Context().Digest(digest.String()).String()
	fmt.Println(pushed)
	if *digestFile != "" {
		if err := os.WriteFile(*digestFile, []byte(pushed+"\n"), 0o644); err != nil {
			return err
		}
	}
	if sbomArtifact == nil {
		return nil
	}
	// Pushed by digest: the registry lists it among the index's referrers, or
	// remote.Write adds it to the referrers tag schema's index.
	ad, err := sbomArtifact.Digest()
	if err != nil {
		return err
	}
	sbomRef := ref.Context().Digest(ad.String())
	if err := remote.Write(sbomRef, sbomArtifact, opts...); err != nil {
		return fmt.Errorf("pushing the SBOM artifact of %s: %w", pushed, err)
	}
	fmt.Fprintf(os.Stderr, "SBOMs of %s: %s\n", pushed, sbomRef)
	if *sbomDigestFile != "" {
		return os.WriteFile(*sbomDigestFile, []byte(sbomRef.String()+"\n"), 0o644)
	}
	return nil
}

// checkGoVersion refuses a binary not built with the toolchain want: an image
// carries the standard library of the Go that built its binary, and a
// scanner judges it by that version.
func checkGoVersion(binaries []string, want string) error {
	for _, b := range binaries {
		plat, path, _ := strings.Cut(b, "=")
		info, err := buildinfo.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--binary %s=%s: no Go build information: %w", plat, path, err)
		}
		if info.GoVersion != want {
			return fmt.Errorf("--binary %s=%s was built with %s, not %s (--go-version): build it with GOTOOLCHAIN=%s", plat, path, info.GoVersion, want, want)
		}
	}
	return nil
}

// addSBOMs reads each --sbom OS/ARCH=PATH into the binary of that platform:
// every platform's or none.
func addSBOMs(s *ociimage.Spec, sboms []string) error {
	if len(sboms) == 0 {
		return nil
	}
	byPlatform := map[string][]byte{}
	for _, a := range sboms {
		plat, path, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("--sbom %q: want OS/ARCH[/VARIANT]=PATH", a)
		}
		p, err := v1.ParsePlatform(plat)
		if err != nil {
			return fmt.Errorf("--sbom %q: %w", a, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--sbom %q: %w", a, err)
		}
		byPlatform[p.String()] = data
	}
	for i := range s.Binaries {
		p := s.Binaries[i].Platform.String()
		data, ok := byPlatform[p]
		if !ok {
			return fmt.Errorf("--sbom: none given for %s (give every platform's, or none)", p)
		}
		s.Binaries[i].SBOM = data
		delete(byPlatform, p)
	}
	for p := range byPlatform {
		return fmt.Errorf("--sbom %s: no --binary of that platform", p)
	}
	return nil
}

func specFrom(binaries, labels []string, entrypoint, created, caBundle string) (ociimage.Spec, error) {
	var s ociimage.Spec
	if created == "" {
		return s, fmt.Errorf("--created is required (e.g. the commit time: git log -1 --format=%%cI)")
	}
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		return s, fmt.Errorf("--created %q: %w", created, err)
	}
	s.Created = t
	if len(binaries) == 0 {
		return s, fmt.Errorf("no --binary given")
	}
	for _, b := range binaries {
		plat, path, ok := strings.Cut(b, "=")
		if !ok {
			return s, fmt.Errorf("--binary %q: want OS/ARCH[/VARIANT]=PATH", b)
		}
		p, err := v1.ParsePlatform(plat)
		if err != nil {
			return s, fmt.Errorf("--binary %q: %w", b, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return s, fmt.Errorf("--binary %q: %w", b, err)
		}
		s.Binaries = append(s.Binaries, ociimage.Binary{
			Platform: *p,
			File:     ociimage.File{Path: filepath.ToSlash(entrypoint), Mode: 0o755, Data: data},
		})
	}
	s.Labels = map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return s, fmt.Errorf("--label %q: want KEY=VALUE", l)
		}
		s.Labels[k] = v
	}
	if caBundle != "" {
		if s.CABundle, err = os.ReadFile(caBundle); err != nil {
			return s, fmt.Errorf("--ca-bundle: %w (install Debian's ca-certificates, or pass --ca-bundle='')", err)
		}
	}
	return s, nil
}

func transport(caFile string) (http.RoundTripper, error) {
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	if caFile == "" {
		return tr, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--registry-ca: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--registry-ca %s: no PEM certificate in it", caFile)
	}
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr, nil
}

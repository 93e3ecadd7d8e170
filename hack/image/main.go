// Command image builds archfilter's multi-platform OCI image index from
// cross-compiled binaries (internal/ociimage) and pushes it to a registry, or
// writes it as an OCI layout. No container engine is involved. `make image`
// runs it; see README, "Container images".
//
//	go run ./hack/image --image REGISTRY/NAME:TAG \
//	    --binary linux/amd64=PATH --binary linux/arm64=PATH ... \
//	    --label org.opencontainers.image.version=v1.2.3 --created 2026-11-24T10:00:00Z
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	var binaries, labels listFlag
	image := fs.String("image", "", "push the index to this reference (REGISTRY/NAME:TAG)")
	layoutDir := fs.String("layout", "", "also write the index to this OCI layout directory")
	entrypoint := fs.String("entrypoint", "/usr/local/bin/archfilter-scheduler", "where each binary is installed; the image's entrypoint")
	created := fs.String("created", "", "creation time of the image and its files, RFC 3339 (the commit's time makes builds reproducible; required)")
	caBundle := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle installed in the image; empty for none")
	registryCA := fs.String("registry-ca", "", "PEM CA that signs the target registry's certificate (for a local registry)")
	digestFile := fs.String("digest-file", "", "write REFERENCE@DIGEST of the pushed index here")
	fs.Var(&binaries, "binary", "OS/ARCH[/VARIANT]=PATH of one platform's binary (repeat per platform)")
	fs.Var(&labels, "label", "KEY=VALUE label of every image and annotation of the index (repeatable)")
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
	idx, err := ociimage.Index(spec)
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if *layoutDir != "" {
		if _, err := layout.Write(*layoutDir, idx); err != nil {
			return fmt.Errorf("writing layout %s: %w", *layoutDir, err)
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
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithTransport(tr),
		remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s (credentials: docker config of this user): %w", ref, err)
	}
	pushed := ref.Context().Digest(digest.String()).String()
	fmt.Println(pushed)
	if *digestFile != "" {
		return os.WriteFile(*digestFile, []byte(pushed+"\n"), 0o644)
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

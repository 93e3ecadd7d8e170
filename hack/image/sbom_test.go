package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/archfilter/archfilter/internal/ociimage"
)

// --sbom gives every platform's SBOM, or none.
func TestAddSBOMs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	amd, arm := write("amd64.cdx.json", "amd64 sbom"), write("arm64.cdx.json", "arm64 sbom")
	newSpec := func() ociimage.Spec {
		var s ociimage.Spec
		for _, p := range []string{"linux/amd64", "linux/arm64"} {
			pl, _ := v1.ParsePlatform(p)
			s.Binaries = append(s.Binaries, ociimage.Binary{Platform: *pl})
		}
		return s
	}
	s := newSpec()
	if err := addSBOMs(&s, []string{"linux/arm64=" + arm, "linux/amd64=" + amd}); err != nil {
		t.Fatal(err)
	}
	if got := string(s.Binaries[0].SBOM) + "," + string(s.Binaries[1].SBOM); got != "amd64 sbom,arm64 sbom" {
		t.Errorf("SBOMs by platform = %q", got)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"one missing", []string{"linux/amd64=" + amd}, "none given for linux/arm64"},
		{"one too many", []string{"linux/amd64=" + amd, "linux/arm64=" + arm, "linux/s390x=" + arm}, "--sbom linux/s390x: no --binary"},
		{"no such file", []string{"linux/amd64=" + amd, "linux/arm64=" + filepath.Join(dir, "nope")}, "nope"},
		{"no path", []string{"linux/amd64"}, "want OS/ARCH[/VARIANT]=PATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpec()
			err := addSBOMs(&s, tc.flags)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("addSBOMs(%v) error = %v, want one containing %q", tc.flags, err, tc.want)
			}
		})
	}
}

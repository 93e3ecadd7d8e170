package kubectlplugin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/resolver"
)

func TestInspect(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	missing := fx.host + "/missing:v1"

	stdout, stderr, code := run(t, "", "inspect", "--insecure-registry", fx.host, "-o", "json",
		fx.multiRef, fx.amdRef, fx.att.Ref, fx.chart.Ref, missing)
	if code != ExitInputError {
		t.Errorf("exit status %d, want %d (one image is missing); stderr:\n%s", code, ExitInputError, stderr)
	}
	var got struct{ Images []imageView }
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("decoding -o json: %v\n%s", err, stdout)
	}
	lin := func(arch string) platformView { return platformView{OS: "linux", Architecture: arch} }
	image := func(digest, arch string) manifestView {
		p := lin(arch)
		return manifestView{Kind: resolver.ManifestImage, Digest: digest, Platform: &p}
	}
	want := []imageView{
		{Image: fx.multiRef, Digest: fx.multi.Digest, setView: setView{Platforms: []platformView{lin("amd64"), lin("arm64")}},
			Manifests: []manifestView{image(fx.multi.Children[0].Digest, "amd64"), image(fx.multi.Children[1].Digest, "arm64")}},
		{Image: fx.amdRef, Digest: fx.amd.Digest, setView: setView{Platforms: []platformView{lin("amd64")}},
			Manifests: []manifestView{image(fx.amd.Digest, "amd64")}},
		// The attestation manifests (unknown/unknown) are not platforms; they are listed
		// as attestations of the entry they describe (their own digests checked below).
		{Image: fx.att.Ref, Digest: fx.att.Digest, setView: setView{Platforms: []platformView{lin("amd64"), lin("arm64")}}},
		{Image: fx.chart.Ref, Digest: fx.chart.Digest, setView: setView{Any: true},
			Manifests: []manifestView{{Kind: resolver.ManifestArtifact, Digest: fx.chart.Digest, ArtifactType: "application/vnd.cncf.helm.config.v1+json"}}},
	}
	if len(got.Images) != 5 {
		t.Fatalf("got %d images, want 5: %s", len(got.Images), stdout)
	}
	// Every platform an index claims has its config checked (configcheck_test.go
	// covers what they find); a single image's platform is its config's.
	var configs []string
	for i := range got.Images {
		for _, c := range got.Images[i].Configs {
			configs = append(configs, c.Image+" "+c.Platform+" "+c.Result)
		}
		got.Images[i].Configs = nil
	}
	wantConfigs := []string{
		fx.multiRef + " linux/amd64 ok", fx.multiRef + " linux/arm64 ok",
		fx.att.Ref + " linux/amd64 ok", fx.att.Ref + " linux/arm64 ok",
	}
	if diff := cmp.Diff(wantConfigs, configs); diff != "" {
		t.Errorf("config checks (-want,+got):\n%s", diff)
	}
	att := got.Images[2].Manifests
	got.Images[2].Manifests = nil
	if diff := cmp.Diff(want, got.Images[:4], cmp.AllowUnexported(imageView{})); diff != "" {
		t.Errorf("images (-want,+got):\n%s", diff)
	}
	var attKinds []string
	for _, m := range att {
		attKinds = append(attKinds, string(m.Kind)+" "+m.Refers)
	}
	wantKinds := []string{"image ", "attestation " + fx.att.Children[0].Digest, "image ", "attestation " + fx.att.Children[1].Digest}
	if diff := cmp.Diff(wantKinds, attKinds); diff != "" {
		t.Errorf("attested image's entries: kind and the entry each attestation describes (-want,+got):\n%s", diff)
	}
	if e := got.Images[4]; e.Image != missing || !strings.Contains(e.Error, "missing") {
		t.Errorf("missing image: got %+v, want an error naming the image", e)
	}
	if !strings.Contains(stderr, missing) {
		t.Errorf("stderr does not name the missing image:\n%s", stderr)
	}
}

func TestInspectTable(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	stdout, stderr, code := run(t, "", "inspect", "--insecure-registry", fx.host, fx.multiRef, fx.armRef)
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	for _, row := range [][]string{
		{fx.multiRef, "index", "linux/amd64,linux/arm64", fx.multi.Digest},
		{fx.multiRef, "image", "linux/amd64", fx.multi.Children[0].Digest},
		{fx.multiRef, "image", "linux/arm64", fx.multi.Children[1].Digest},
		{fx.armRef, "image", "linux/arm/v7", fx.armv7.Digest},
	} {
		if !hasRow(stdout, row...) {
			t.Errorf("no row with %q in:\n%s", row, stdout)
		}
	}
}

func TestInspectCredentials(t *testing.T) {
	m := registrytest.NewMemory(t, registrytest.WithBasicAuth("ci", "s3cret"))
	fx := pushFixtures(t, m)

	_, stderr, code := run(t, "", "inspect", "--insecure-registry", fx.host, fx.multiRef)
	if code != ExitInputError || !strings.Contains(stderr, fx.multiRef) {
		t.Errorf("anonymous: exit status %d, want %d and an error naming the image; stderr:\n%s", code, ExitInputError, stderr)
	}

	writeDockerConfig(t, fx.host, "ci", "s3cret")
	stdout, stderr, code := run(t, "", "inspect", "--insecure-registry", fx.host, fx.multiRef)
	if code != 0 || !hasRow(stdout, fx.multiRef, "linux/arm64") {
		t.Errorf("with the docker config: exit status %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func TestInspectBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"inspect", "-o", "csv", "x"},
		{"inspect", "--registry-ca", "nofile", "x"},
		{"inspect", "--pull-secret", "noslash", "x"},
	} {
		if _, stderr, code := run(t, "", args...); code != ExitInputError {
			t.Errorf("%q: exit status %d, want %d; stderr:\n%s", args, code, ExitInputError, stderr)
		}
	}
}

// hasRow reports whether a line of table holds every cell.
func hasRow(table string, cells ...string) bool {
	for _, line := range strings.Split(table, "\n") {
		fields := strings.Fields(line)
		ok := true
		for _, c := range cells {
			found := false
			for _, f := range fields {
				if f == c {
					found = true
				}
			}
			ok = ok && found
		}
		if ok {
			return true
		}
	}
	return false
}

// TestInspectPrintsPlatformsOneWay: platforms print as pkg/platform writes them, however
// the manifest spells them: arm64/v8 and aarch64 are linux/arm64, as everywhere else.
func TestInspectPrintsPlatformsOneWay(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)
	idx := f.Index("spelt:v1", registrytest.OCI, "linux/x86_64", "linux/arm64/v8")
	single := f.Image("single:v1", registrytest.Docker, "linux/aarch64")
	stdout, stderr, code := run(t, "", "inspect", "--insecure-registry", m.Host(), idx.Ref, single.Ref)
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	for _, row := range [][]string{
		{idx.Ref, "index", "linux/amd64,linux/arm64"},
		{idx.Ref, "image", "linux/arm64"},
		{single.Ref, "image", "linux/arm64"},
	} {
		if !hasRow(stdout, row...) {
			t.Errorf("no row with %q in:\n%s", row, stdout)
		}
	}
	if strings.Contains(stdout, "v8") || strings.Contains(stdout, "aarch64") || strings.Contains(stdout, "x86_64") {
		t.Errorf("a platform is printed as the manifest spells it:\n%s", stdout)
	}
}

package kubectlplugin

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// completionScript is what kubectl 1.26+ runs to complete the plugin's arguments.
const completionScript = "kubectl_complete-archfilter"

// TestKrewManifest checks hack/krew/archfilter.yaml against what hack/release/release.sh
// builds: one entry per CLI platform, the archive name, and the binary in it.
func TestKrewManifest(t *testing.T) {
	body, err := os.ReadFile("../../hack/krew/archfilter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		APIVersion, Kind string
		Metadata         struct{ Name string }
		Spec             struct {
			Version, Homepage, ShortDescription, Description string
			Platforms                                        []struct {
				Selector struct{ MatchLabels map[string]string } `json:"selector"`
				URI      string                                  `json:"uri"`
				SHA256   string                                  `json:"sha256"`
				Bin      string                                  `json:"bin"`
				Files    []struct{ From, To string }             `json:"files"`
			}
		}
	}
	if err := yaml.UnmarshalStrict(body, &manifest); err != nil {
		t.Fatalf("hack/krew/archfilter.yaml: %v", err)
	}
	script, err := os.ReadFile("../../hack/release/release.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`CLI_PLATFORMS=\$\{CLI_PLATFORMS:-([^}]*)\}`).FindSubmatch(script)
	if m == nil {
		t.Fatal("release.sh: no CLI_PLATFORMS default")
	}
	want := strings.Fields(string(m[1]))
	if !strings.Contains(string(script), "archive=kubectl-archfilter_${VERSION}_${os}_${arch}.tar.gz") {
		t.Fatal("release.sh no longer names archives kubectl-archfilter_${VERSION}_${os}_${arch}.tar.gz: update the manifest and this test")
	}
	if !strings.Contains(string(script), `files+=(`+completionScript+`)`) {
		t.Fatalf("release.sh no longer puts %s in the archives: update the manifest and this test", completionScript)
	}
	if manifest.Kind != "Plugin" || manifest.Metadata.Name != "archfilter" || manifest.Spec.Version != "VERSION" {
		t.Errorf("kind %q, name %q, version %q; want Plugin, archfilter, VERSION", manifest.Kind, manifest.Metadata.Name, manifest.Spec.Version)
	}
	var got []string
	for _, p := range manifest.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		got = append(got, os+"/"+arch)
		exe := "kubectl-archfilter"
		if os == "windows" {
			exe += ".exe"
		}
		archive := "/VERSION/kubectl-archfilter_VERSION_" + os + "_" + arch + ".tar.gz"
		if !strings.HasSuffix(p.URI, archive) {
			t.Errorf("%s/%s: uri %q does not end in %q", os, arch, p.URI, archive)
		}
		if p.Bin != exe || p.SHA256 != "SHA256_"+os+"_"+arch {
			t.Errorf("%s/%s: bin %q, sha256 %q", os, arch, p.Bin, p.SHA256)
		}
		var froms []string
		for _, f := range p.Files {
			froms = append(froms, f.From)
		}
		slices.Sort(froms)
		want := []string{"LICENSE", exe}
		if os != "windows" {
			// The completion script is POSIX sh: every archive but Windows' has it.
			want = append(want, completionScript)
		}
		slices.Sort(want)
		if !slices.Equal(froms, want) {
			t.Errorf("%s/%s: files %q, want what the archive holds: %q", os, arch, froms, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("manifest platforms %q, release.sh builds %q", got, want)
	}
}

package charttest

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/test/manifests/objects"
	"github.com/archfilter/archfilter/test/toolscache"
)

// kustomizeCommand is what hack/deploy/lib.sh renders with: the kustomize the
// manifest tests build (the tools cache; make test-chart builds it too), else
// kubectl's.
func kustomizeCommand(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("KUSTOMIZE"); k != "" {
		return k
	}
	if p, ok := toolscache.Built(repoRoot(), "kustomize"); ok {
		return p + " build"
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("no kustomize: hack/cluster/tools.sh kustomize builds it into the tools cache, or install kubectl")
	}
	return "kubectl kustomize"
}

// deployLib runs a bash script with hack/deploy/lib.sh sourced.
func deployLib(t *testing.T, script string, env ...string) (stdout string, err error) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "set -euo pipefail; source hack/deploy/lib.sh; "+script)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), append(env, "KUSTOMIZE="+kustomizeCommand(t))...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: stderr.Bytes()}
	}
	return out.String(), nil
}

// TestPinOverlay: what make deploy and make release apply is each overlay
// with the one image name replaced by kustomize's images:, by tag or by
// digest, the k8s1.35 overlay on its flavour's tag; and the kubeadm static
// pod with the same reference.
func TestPinOverlay(t *testing.T) {
	const image = "registry.example.com:5000/team/archfilter"
	digest := "sha256:" + strings.Repeat("0f", 32)
	for _, tc := range []struct {
		overlay, tag, digest, want string
	}{
		{"secondary", "v1.2.3", "", image + ":v1.2.3"},
		{"secondary-k8s1.35", "v1.2.3-k8s1.35", "", image + ":v1.2.3-k8s1.35"},
		{"secondary", "", digest, image + "@" + digest},
		{"secondary-k8s1.35", "", digest, image + "@" + digest},
		// The companion's overlay names archfilter/archfilter-placement.
		{"placement", "v1.2.3", "", image + ":v1.2.3"},
		{"placement", "", digest, image + "@" + digest},
	} {
		t.Run(tc.overlay+" "+tc.want, func(t *testing.T) {
			dir := t.TempDir()
			out, err := deployLib(t, `pin_overlay "$DIR" "$OVERLAY" "$IMAGE" "$TAG" "$DIGEST"; kustomize_build "$DIR"`,
				"DIR="+dir, "OVERLAY="+tc.overlay, "IMAGE="+image, "TAG="+tc.tag, "DIGEST="+tc.digest)
			if err != nil {
				t.Fatalf("%v: %s", err, err.(*exec.ExitError).Stderr)
			}
			objs, err := objects.Decode([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			d := objects.Of[*appsv1.Deployment](objs)
			if len(d) != 1 {
				t.Fatalf("want one Deployment, got %d", len(d))
			}
			if got := d[0].Spec.Template.Spec.Containers[0].Image; got != tc.want {
				t.Errorf("image %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("heal: the scheduler's image and the companion's", func(t *testing.T) {
		const companion = "registry.example.com:5000/team/archfilter-placement"
		cdigest := "sha256:" + strings.Repeat("1e", 32)
		for _, tc := range []struct {
			name, tag, digest, ctag, cdigest string
			want                             map[string]string // Deployment -> image
		}{
			{"tags", "v1.2.3", "", "v1.2.3", "", map[string]string{"archfilter-scheduler": image + ":v1.2.3", "archfilter-heal": companion + ":v1.2.3"}},
			{"digests", "", digest, "", cdigest, map[string]string{"archfilter-scheduler": image + "@" + digest, "archfilter-heal": companion + "@" + cdigest}},
		} {
			dir := t.TempDir()
			out, err := deployLib(t, `pin_overlay "$DIR" heal "$IMAGE" "$TAG" "$DIGEST" "$CIMAGE" "$CTAG" "$CDIGEST"; kustomize_build "$DIR"`,
				"DIR="+dir, "IMAGE="+image, "TAG="+tc.tag, "DIGEST="+tc.digest, "CIMAGE="+companion, "CTAG="+tc.ctag, "CDIGEST="+tc.cdigest)
			if err != nil {
				t.Fatalf("%s: %v: %s", tc.name, err, err.(*exec.ExitError).Stderr)
			}
			objs, err := objects.Decode([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, d := range objects.Of[*appsv1.Deployment](objs) {
				got[d.Name] = d.Spec.Template.Spec.Containers[0].Image
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("%s: images %v, want %v", tc.name, got, tc.want)
			}
		}
		// Without the companion's image the heal overlay is refused, not
		// rendered with an unpinned image.
		if _, err := deployLib(t, `pin_overlay "$DIR" heal "$IMAGE" v1.2.3 ""`, "DIR="+t.TempDir(), "IMAGE="+image); err == nil {
			t.Error("pin_overlay heal without the companion's image succeeded")
		}
	})
	t.Run("image and tag per flavour", func(t *testing.T) {
		for _, tc := range []struct{ overlay, env, want string }{
			{"secondary", "", "registry.example.com/archfilter-scheduler:v1.2.3"},
			{"kubeadm-replacement", "", "registry.example.com/archfilter-scheduler:v1.2.3"},
			{"secondary-k8s1.35", "", "registry.example.com/archfilter-scheduler:v1.2.3-k8s1.35"},
			{"placement", "", "registry.example.com/archfilter-placement:v1.2.3"},
			{"placement", "PLACEMENT_IMAGE=other.example.com/p", "other.example.com/p:v1.2.3"},
		} {
			env := []string{"OVERLAY=" + tc.overlay, "IMAGE=registry.example.com/archfilter-scheduler"}
			if tc.env != "" {
				env = append(env, tc.env)
			}
			out, err := deployLib(t, `f=$(overlay_flavour "$OVERLAY"); echo "$(flavour_image "$f"):$(flavour_tag "$f" v1.2.3)"`, env...)
			if err != nil {
				t.Fatalf("%v: %s", err, err.(*exec.ExitError).Stderr)
			}
			if got := strings.TrimSpace(out); got != tc.want {
				t.Errorf("%s %s: %s, want %s", tc.overlay, tc.env, got, tc.want)
			}
		}
	})
	t.Run("kubeadm node files", func(t *testing.T) {
		dir := t.TempDir()
		ref := image + "@" + digest
		if _, err := deployLib(t, `pin_node_files "$DIR" "$REF"`, "DIR="+dir, "REF="+ref); err != nil {
			t.Fatalf("%v: %s", err, err.(*exec.ExitError).Stderr)
		}
		data, err := os.ReadFile(filepath.Join(dir, "kube-scheduler.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := objects.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		pods := objects.Of[*corev1.Pod](objs)
		if len(pods) != 1 || pods[0].Spec.Containers[0].Image != ref {
			t.Fatalf("static pod: %v, want the image %s", objs, ref)
		}
		if cfg, err := os.ReadFile(filepath.Join(dir, "config.yaml")); err != nil || !bytes.Equal(cfg, readFile(t, "manifests/overlays/kubeadm-replacement/node/config.yaml")) {
			t.Errorf("config.yaml not copied as is (%v)", err)
		}
	})
}

// TestReleaseRefusesVersion: make release stops before building or writing
// anything unless VERSION is a release tag.
func TestReleaseRefusesVersion(t *testing.T) {
	for _, version := range []string{"1.2.3", "v1.2", "v1.2.3.4", "latest", "v01.2.3", "7758ce9-dirty", "v1.2.3+build.1"} {
		t.Run(version, func(t *testing.T) {
			dist := filepath.Join(t.TempDir(), "dist")
			cmd := exec.Command("hack/release/release.sh")
			cmd.Dir = repoRoot()
			cmd.Env = append(os.Environ(), "VERSION="+version, "IMAGE=registry.example.com/archfilter", "GIT_COMMIT=0", "BUILD_DATE=2026-01-01T00:00:00Z", "DIST="+dist)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("release.sh accepted VERSION=%s:\n%s", version, out)
			}
			if !strings.Contains(string(out), "is not a release tag") {
				t.Errorf("output does not say why:\n%s", out)
			}
			if _, err := os.Stat(dist); !os.IsNotExist(err) {
				t.Errorf("%s written for a refused version", dist)
			}
		})
	}
}

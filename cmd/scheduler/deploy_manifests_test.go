package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/test/manifests"
)

// The deployable manifests (manifests/base, manifests/overlays), checked on
// the files; test/e2e renders the same overlays with kustomize, runs the same
// checks on its output and submits it to an API server (server-side dry run).

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(manifests.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func load(t *testing.T, rel string) []runtime.Object {
	t.Helper()
	objs, _, err := manifests.Load(manifests.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestManifestsBaseConfig: the base's config.yaml is a copy (kustomize loads
// no file from outside a kustomization) that must not drift.
func TestManifestsBaseConfig(t *testing.T) {
	if !bytes.Equal(readFile(t, "manifests/base/config.yaml"), readFile(t, "manifests/scheduler-config/secondary-scheduler.yaml")) {
		t.Fatal("manifests/base/config.yaml differs from manifests/scheduler-config/secondary-scheduler.yaml; " +
			"edit the latter and run: cp manifests/scheduler-config/secondary-scheduler.yaml manifests/base/config.yaml")
	}
}

// TestManifestsSecondary: the base and the secondary overlay yield exactly
// the expected objects; Deployment, Service and RBAC pass manifests.CheckSecondary
// (2 replicas, probes on 10259 over HTTPS, non-root, read-only root fs, no
// capabilities, spread over nodes, linux of any arch; the RBAC rules exactly
// the expected set, no '*', secrets only list/watch, and every needed request
// allowed by the RBAC authorizer with the bootstrap policy, nothing more).
func TestManifestsSecondary(t *testing.T) {
	config := readFile(t, "manifests/scheduler-config/secondary-scheduler.yaml")
	for _, dir := range []string{"manifests/base", manifests.SecondaryOverlay, manifests.SecondaryK8s135Overlay} {
		t.Run(dir, func(t *testing.T) {
			if err := manifests.CheckSecondary(load(t, dir), config); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestManifestsHeal: the heal overlay is the secondary overlay's scheduler
// and the companion in --mode=heal, report mode (manifests.CheckHealOverlay:
// one hardened replica, its own Lease, metrics on HTTPS, and RBAC that allows
// what the watch asks and nothing of the placement mode's, no rule it does
// not need).
func TestManifestsHeal(t *testing.T) {
	if err := manifests.CheckHealOverlay(load(t, manifests.HealOverlay), readFile(t, "manifests/scheduler-config/secondary-scheduler.yaml")); err != nil {
		t.Fatal(err)
	}
}

// TestManifestsFlavourImages: the k8s1.35 overlay runs the image of its
// flavour, the same image name with the tag suffix -k8s1.35, and is otherwise
// the secondary overlay.
func TestManifestsFlavourImages(t *testing.T) {
	image := func(dir string) string {
		t.Helper()
		deployments := manifests.Of[*appsv1.Deployment](load(t, dir))
		if len(deployments) != 1 {
			t.Fatalf("%s: want one Deployment, got %d", dir, len(deployments))
		}
		return deployments[0].Spec.Template.Spec.Containers[0].Image
	}
	mainLine, k8s135 := image(manifests.SecondaryOverlay), image(manifests.SecondaryK8s135Overlay)
	if want := mainLine + "-k8s1.35"; k8s135 != want {
		t.Errorf("the k8s1.35 overlay runs %q, want %q (the main line's %q with the flavour suffix)", k8s135, want, mainLine)
	}
	if got, want := len(load(t, manifests.SecondaryK8s135Overlay)), len(load(t, manifests.SecondaryOverlay)); got != want {
		t.Errorf("the k8s1.35 overlay has %d objects, the secondary overlay %d", got, want)
	}
}

// TestManifestsKubeadmReplacement: the overlay is ArchFilter's ClusterRole
// bound to the user system:kube-scheduler, enough (with the bootstrap policy)
// for a default scheduler; node/config.yaml is default-scheduler.yaml plus
// the kubeconfig; node/kube-scheduler.yaml is kubeadm's static pod running the
// Deployment's image with that config.
func TestManifestsKubeadmReplacement(t *testing.T) {
	if err := manifests.CheckKubeadmRBAC(load(t, manifests.KubeadmOverlay)); err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.DecodeFile(manifests.Path(manifests.KubeadmNodeDir + "/kube-scheduler.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pods := manifests.Of[*corev1.Pod](objs)
	if len(objs) != 1 || len(pods) != 1 {
		t.Fatalf("kube-scheduler.yaml: want one Pod, got %d objects", len(objs))
	}
	deployments := manifests.Of[*appsv1.Deployment](load(t, "manifests/base"))
	if len(deployments) != 1 {
		t.Fatal("no Deployment in the base")
	}
	image := deployments[0].Spec.Template.Spec.Containers[0].Image
	if err := manifests.CheckKubeadmNode(pods[0], readFile(t, manifests.KubeadmNodeDir+"/config.yaml"),
		readFile(t, "manifests/scheduler-config/default-scheduler.yaml"), image); err != nil {
		t.Fatal(err)
	}
	if dockerfile := readFile(t, "Dockerfile"); !bytes.Contains(dockerfile, []byte(`ENTRYPOINT ["`+manifests.Entrypoint+`"]`)) {
		t.Errorf("the Dockerfile's ENTRYPOINT is not %s, which the static pod runs", manifests.Entrypoint)
	}
}

// TestManifestsNoStrayFiles: every YAML file under manifests/base and
// manifests/overlays is read by a kustomization (so `kubectl apply -k`
// applies it), except the kubeadm node files, which are copied by hand.
func TestManifestsNoStrayFiles(t *testing.T) {
	read := map[string]bool{}
	for _, dir := range []string{"manifests/base", manifests.SecondaryOverlay, manifests.SecondaryK8s135Overlay, manifests.KubeadmOverlay, "manifests/overlays/placement", manifests.HealOverlay} {
		_, files, err := manifests.Load(manifests.Path(dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			read[filepath.Clean(f)] = true
		}
	}
	var stray []string
	for _, root := range []string{"manifests/base", "manifests/overlays"} {
		err := filepath.WalkDir(manifests.Path(root), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				return err
			}
			if filepath.Dir(path) == manifests.Path(manifests.KubeadmNodeDir) {
				return nil
			}
			if !read[path] {
				stray = append(stray, strings.TrimPrefix(path, manifests.Root()+"/"))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(stray) > 0 {
		slices.Sort(stray)
		t.Errorf("not part of any kustomization (add them to one, or remove them): %v", stray)
	}
	node, err := os.ReadDir(manifests.Path(manifests.KubeadmNodeDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range node {
		names = append(names, e.Name())
	}
	if want := []string{"config.yaml", "kube-scheduler.yaml"}; !slices.Equal(names, want) {
		t.Errorf("%s holds %v; the README's steps copy %v", manifests.KubeadmNodeDir, names, want)
	}
}

// TestManifestsImageVersion: the manifests run the release the chart names
// (charts/archfilter/Chart.yaml appVersion), so kustomize and Helm users get
// the same image; make deploy and make release set another version.
func TestManifestsImageVersion(t *testing.T) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(readFile(t, "charts/archfilter/Chart.yaml"), &chart); err != nil {
		t.Fatal(err)
	}
	if !semver.MatchString(chart.AppVersion) {
		t.Fatalf("charts/archfilter/Chart.yaml: appVersion %q is not vMAJOR.MINOR.PATCH", chart.AppVersion)
	}
	for dir, want := range map[string]string{
		manifests.SecondaryOverlay:       manifests.Image + ":" + chart.AppVersion,
		manifests.SecondaryK8s135Overlay: manifests.Image + ":" + chart.AppVersion + "-k8s1.35",
	} {
		deployments := manifests.Of[*appsv1.Deployment](load(t, dir))
		if len(deployments) != 1 {
			t.Fatalf("%s: want one Deployment, got %d", dir, len(deployments))
		}
		if got := deployments[0].Spec.Template.Spec.Containers[0].Image; got != want {
			t.Errorf("%s runs %q, want %q (the chart's appVersion)", dir, got, want)
		}
	}
}

// semver is a release tag: vMAJOR.MINOR.PATCH with an optional pre-release.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// latestTag finds an image reference or tag value naming "latest".
var latestTag = regexp.MustCompile(`(?i)(:latest\b|\b(new)?tag:\s*["']?latest\b)`)

// TestNoLatestTag: nothing users deploy or read names the tag latest, which
// moves under a running cluster and cannot be rolled back to. Tests are
// exempt: they name it to prove it is refused.
func TestNoLatestTag(t *testing.T) {
	var found []string
	for _, root := range []string{"manifests", "charts", "docs", "README.md"} {
		err := filepath.WalkDir(manifests.Path(root), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				if latestTag.MatchString(line) {
					found = append(found, fmt.Sprintf("%s:%d: %s", strings.TrimPrefix(path, manifests.Root()+"/"), i+1, strings.TrimSpace(line)))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) > 0 {
		t.Errorf("the tag latest (pin a release, or let make deploy/make release set it):\n%s", strings.Join(found, "\n"))
	}
}

// TestManifestsPodSecurity: every workload of every overlay runs hardened
// (test/manifests/podsecurity: non-root, read-only root filesystem, no
// privilege escalation, seccomp RuntimeDefault, no capabilities, no host
// namespaces or paths; Pod Security Admission's restricted level and more),
// and the check catches each of those fields taken away from each container.
// test/e2e runs the same on kustomize's output. The kubeadm overlay's node
// files are a control-plane static pod, kubeadm's own shape (host network,
// host paths), checked by TestManifestsKubeadmReplacement.
func TestManifestsPodSecurity(t *testing.T) {
	dirs, err := filepath.Glob(manifests.Path("manifests/overlays/*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if rel := "manifests/overlays/" + filepath.Base(d); manifests.OverlayWorkloads[rel] == nil && rel != manifests.KubeadmOverlay {
			t.Errorf("%s: not in manifests.OverlayWorkloads, so its workloads are not checked", rel)
		}
	}
	for dir, want := range manifests.OverlayWorkloads {
		t.Run(dir, func(t *testing.T) {
			objs := load(t, dir)
			if err := manifests.CheckPodSecurity(objs, want); err != nil {
				t.Error(err)
			}
		})
	}
}

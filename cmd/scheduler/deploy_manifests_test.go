package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

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
	for _, dir := range []string{"manifests/base", manifests.SecondaryOverlay, manifests.SecondaryK8s134Overlay} {
		t.Run(dir, func(t *testing.T) {
			if err := manifests.CheckSecondary(load(t, dir), config); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestManifestsFlavourImages: the k8s1.34 overlay runs the image of its
// flavour, the same image name with the tag suffix -k8s1.34, and is otherwise
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
	mainLine, k8s134 := image(manifests.SecondaryOverlay), image(manifests.SecondaryK8s134Overlay)
	if want := mainLine + "-k8s1.34"; k8s134 != want {
		t.Errorf("the k8s1.34 overlay runs %q, want %q (the main line's %q with the flavour suffix)", k8s134, want, mainLine)
	}
	if got, want := len(load(t, manifests.SecondaryK8s134Overlay)), len(load(t, manifests.SecondaryOverlay)); got != want {
		t.Errorf("the k8s1.34 overlay has %d objects, the secondary overlay %d", got, want)
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
	for _, dir := range []string{"manifests/base", manifests.SecondaryOverlay, manifests.SecondaryK8s134Overlay, manifests.KubeadmOverlay} {
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

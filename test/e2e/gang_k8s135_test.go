//go:build k8s1.35

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

var (
	crdResource      = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	podGroupResource = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
)

// TestArchFilterGang: on the k8s1.35 flavour, gangs are sigs.k8s.io/scheduler-plugins'
// Coscheduling (a PodGroup custom resource, pods labelled with its name), which
// this flavour's binary carries: enabled beside ArchFilter, a gang of mixed
// images, one of which the registry answers seconds after the others, is held
// by ArchFilter until every member's images are known and goes through
// together; all are bound, each where its image runs.
func TestArchFilterGang(t *testing.T) {
	ctx, ns := setup(t)
	dyn := dynamicClient(t)
	installPodGroupCRD(ctx, t, dyn)
	slow := newSlowRegistry(t, "slow", 3*time.Second)
	g := launchWith(ctx, t, framework.LaunchOptions{
		Replicas:       1,
		ArchFilterArgs: map[string]any{"registries": gangRegistries(slow)},
		Plugins: map[string]any{
			"multiPoint": map[string]any{"enabled": []any{map[string]any{"name": "ArchFilter"}, map[string]any{"name": "Coscheduling"}}},
			"filter":     map[string]any{"enabled": []any{map[string]any{"name": "ArchFilter"}}},
			"queueSort":  map[string]any{"enabled": []any{map[string]any{"name": "Coscheduling"}}, "disabled": []any{map[string]any{"name": "*"}}},
		},
		ExtraArgs: []string{"-v=5"},
	})
	members := gangMembers(ctx, t, ns, slow)
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "gang", "namespace": ns},
		"spec":     map[string]any{"minMember": int64(len(members))},
	}}
	if _, err := dyn.Resource(podGroupResource).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []*v1.Pod
	for _, m := range members {
		p := pod(ns, m.name, m.ref, g.SchedulerName())
		p.Labels["scheduling.x-k8s.io/pod-group"] = "gang"
		pods = append(pods, p)
	}
	createGang(ctx, t, ns, pods)
	checkGang(ctx, t, ns, members, slow)
	checkHeldForGang(t)
}

func dynamicClient(t *testing.T) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// installPodGroupCRD creates scheduler-plugins' PodGroup CRD from the module
// this flavour builds with, and waits until it is served.
func installPodGroupCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	cmd := exec.Command("go", "list", "-modfile=go.k8s1.35.mod", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/scheduler-plugins")
	cmd.Dir = framework.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("not run: the scheduler-plugins module cannot be found for its PodGroup CRD: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "manifests", "coscheduling", "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	_, err = dyn.Resource(crdResource).Create(ctx, &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(podGroupResource).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the PodGroup CRD is not served: %v", err)
	}
}

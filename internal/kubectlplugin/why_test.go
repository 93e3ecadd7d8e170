package kubectlplugin

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

func node(name, os, arch string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelOSStable: os, v1.LabelArchStable: arch}}}
}

// TestWhy runs against client-go's fake clientset (not a real apiserver) and the
// in-memory registry, whose images are private: only the pod's own pull secret reads them.
func TestWhy(t *testing.T) {
	m := registrytest.NewMemory(t, registrytest.WithBasicAuth("puller", "pw"))
	fx := pushFixtures(t, m)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"},
		Spec: v1.PodSpec{
			ImagePullSecrets: []v1.LocalObjectReference{{Name: "regcred"}},
			InitContainers: []v1.Container{
				{Name: "setup", Image: fx.armRef},
				{Name: "mesh", Image: fx.multiRef, RestartPolicy: &always},
			},
			Containers: []v1.Container{{Name: "app", Image: fx.multiRef}},
		},
	}
	auth := base64.StdEncoding.EncodeToString([]byte("puller:pw"))
	secret := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "shop"},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, fx.host, auth))},
	}
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	event := func(name, reason string) *v1.Event {
		return &v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "shop"},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "shop", UID: "uid-1"},
			Reason:         reason, Message: reason + " message", Type: v1.EventTypeNormal, LastTimestamp: at,
		}
	}
	objs := []runtime.Object{pod, secret,
		node("a1", "linux", "amd64"), node("a2", "linux", "amd64"), node("r1", "linux", "arm64"), node("w1", "windows", "amd64"),
		event("e1", archfilter.EventResolved), event("e2", "Pulled"),
	}
	client := fake.NewClientset(objs...)
	reg := &registryFlags{insecure: []string{fx.host}, timeout: 10 * time.Second}

	v, err := explainPod(context.Background(), client, "shop", "web", reg, testDecider(t, platform.ARM64RunsARM))
	if err != nil {
		t.Fatal(err)
	}
	if got := setString(v.allowed); got != "linux/arm64" {
		t.Errorf("runs on %s, want linux/arm64 (arm/v7 on arm64 under the 32-bit rule)", got)
	}
	var kinds []string
	for _, img := range v.Images {
		if img.Error != "" {
			t.Errorf("%s: %s (the pod's pull secret should have been used)", img.Container, img.Error)
		}
		kinds = append(kinds, string(img.Kind)+"/"+img.Container)
	}
	if diff := cmp.Diff([]string{"init/setup", "sidecar/mesh", "container/app"}, kinds); diff != "" {
		t.Errorf("images (-want,+got):\n%s", diff)
	}
	want := []nodeGroup{
		{Platform: "linux/amd64", Nodes: 2},
		// The arm/v7 image (setup) runs there only under the 32-bit rule, the others directly.
		{Platform: "linux/arm64", Nodes: 1, CanRun: true, Allowed: true, Rule: "arm64 runs linux/arm/v7: setup; direct: mesh, app"},
		{Platform: "windows/amd64", Nodes: 1},
	}
	if diff := cmp.Diff(want, v.Nodes); diff != "" {
		t.Errorf("nodes (-want,+got):\n%s", diff)
	}
	if len(v.Events) != 1 || v.Events[0].Reason != archfilter.EventResolved {
		t.Errorf("events: got %+v, want only the archfilter one", v.Events)
	}

	// Without the rule nothing is left, and the image that empties the set comes first.
	v, err = explainPod(context.Background(), client, "shop", "web", reg, testDecider(t))
	if err != nil {
		t.Fatal(err)
	}
	if !v.allowed.IsEmpty() || v.Images[0].Container != "mesh" || !strings.Contains(v.Blocking, `sidecar "mesh"`) {
		t.Errorf("without --run-32bit: want no platform and sidecar mesh named first; got %s, %+v", setString(v.allowed), v)
	}
	var out strings.Builder
	if err := printWhy(genericiooptions.IOStreams{Out: &out}, outputTable, v); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`No platform left: sidecar "mesh"`, "ImagePlatformsResolved", "linux/arm64"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}

	if _, err := explainPod(context.Background(), client, "shop", "gone", reg, testDecider(t)); err == nil || !strings.Contains(err.Error(), "shop/gone") {
		t.Errorf("missing pod: got %v, want an error naming it", err)
	}

	// An image that cannot be resolved: the others' platforms say nothing of the pod.
	unresolved := pod.DeepCopy()
	unresolved.Name, unresolved.UID = "half", "uid-2"
	unresolved.Spec.Containers = append(unresolved.Spec.Containers, v1.Container{Name: "gone", Image: fx.host + "/shop/missing:v1"})
	if _, err := client.CoreV1().Pods("shop").Create(context.Background(), unresolved, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err = explainPod(context.Background(), client, "shop", "half", reg, testDecider(t))
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := printWhy(genericiooptions.IOStreams{Out: &out}, outputTable, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Runs on: unknown: an image could not be resolved") {
		t.Errorf("with an unresolved image, want Runs on: unknown; got:\n%s", out.String())
	}
}

// TestGroupNodesRule: the RULE column says how each node platform runs each image, asked
// of the image's own platforms. The 32-bit rule follows containerd's platform vectors
// (github.com/containerd/platforms, compare.go: an arm64 host also runs arm/v8 to arm/v5,
// an amd64 host 386), opted into with --run-32bit; containerd prefers the host's own
// platform when an image offers it, so such an image runs directly.
func TestGroupNodesRule(t *testing.T) {
	arm64Rule := platform.NewCompat(platform.ARM64RunsARM)
	img := func(container, platforms string) workloadImage {
		set, err := platform.ParseList(platforms)
		if err != nil {
			t.Fatal(err)
		}
		return workloadImage{Container: container, set: set}
	}
	win := func(container, version string) workloadImage {
		return workloadImage{Container: container, set: platform.NewSet(platform.Platform{OS: "windows", Architecture: "amd64", OSVersion: version})}
	}
	windowsNode := func(name, build string) *v1.Node {
		n := node(name, "windows", "amd64")
		n.Labels[v1.LabelWindowsBuild] = build
		return n
	}
	for _, tc := range []struct {
		name   string
		compat platform.Compat
		images []workloadImage
		nodes  []*v1.Node
		want   []nodeGroup
	}{
		{
			name:   "arm/v7 beside arm64: per container, the 32-bit rule first",
			compat: arm64Rule,
			images: []workloadImage{img("setup", "linux/arm/v7"), img("app", "linux/amd64,linux/arm64")},
			nodes:  []*v1.Node{node("r1", "linux", "arm64"), node("a1", "linux", "amd64")},
			want: []nodeGroup{
				{Platform: "linux/amd64", Nodes: 1},
				{Platform: "linux/arm64", Nodes: 1, CanRun: true, Rule: "arm64 runs linux/arm/v7: setup; direct: app"},
			},
		},
		{
			name:   "only arm/v7 images: the rule alone",
			compat: arm64Rule,
			images: []workloadImage{img("a", "linux/arm/v7"), img("b", "linux/arm/v6,linux/arm/v7")},
			nodes:  []*v1.Node{node("r1", "linux", "arm64")},
			want:   []nodeGroup{{Platform: "linux/arm64", Nodes: 1, CanRun: true, Rule: "arm64 runs linux/arm/v7"}},
		},
		{
			name:   "images offering arm/v7 and arm64 run directly, though arm/v7 stays in the intersection",
			compat: arm64Rule,
			images: []workloadImage{img("a", "linux/arm/v7,linux/arm64"), img("b", "linux/arm/v7,linux/arm64")},
			nodes:  []*v1.Node{node("r1", "linux", "arm64")},
			want:   []nodeGroup{{Platform: "linux/arm64", Nodes: 1, CanRun: true, Rule: "direct (linux/arm64)"}},
		},
		{
			name:   "386 beside amd64 under the amd64 rule",
			compat: platform.NewCompat(platform.AMD64Runs386),
			images: []workloadImage{img("app", "linux/amd64"), img("legacy", "linux/386")},
			nodes:  []*v1.Node{node("a1", "linux", "amd64")},
			want:   []nodeGroup{{Platform: "linux/amd64", Nodes: 1, CanRun: true, Rule: "direct: app; amd64 runs linux/386: legacy"}},
		},
		{
			name:   "no rule: arm/v7 does not run on arm64",
			images: []workloadImage{img("setup", "linux/arm/v7")},
			nodes:  []*v1.Node{node("r1", "linux", "arm64")},
			want:   []nodeGroup{{Platform: "linux/arm64", Nodes: 1}},
		},
		{
			// Microsoft's version-compatibility rules (containerd's Windows matcher): a
			// Windows Server 2022 image runs on a 2025 host, directly; a 2019 host runs only
			// 2019 images.
			name:   "Windows Server 2022 image on 2025 and 2019 nodes",
			images: []workloadImage{win("app", "10.0.20348.1")},
			nodes:  []*v1.Node{windowsNode("w1", "10.0.26100"), windowsNode("w2", "10.0.17763")},
			want: []nodeGroup{
				{Platform: "windows/amd64 (build 10.0.17763)", Nodes: 1},
				{Platform: "windows/amd64 (build 10.0.26100)", Nodes: 1, CanRun: true, Rule: "direct (windows/amd64)"},
			},
		},
		{
			name:   "an image that did not resolve is left out of the rule",
			compat: arm64Rule,
			images: []workloadImage{img("setup", "linux/arm/v7"), {Container: "broken", Error: "manifest unknown"}},
			nodes:  []*v1.Node{node("r1", "linux", "arm64")},
			want:   []nodeGroup{{Platform: "linux/arm64", Nodes: 1, CanRun: true, Rule: "arm64 runs linux/arm/v7"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allowed := platform.Any()
			for _, img := range tc.images {
				if img.Error == "" {
					allowed = allowed.Intersect(tc.compat.Expand(img.set))
				}
			}
			nodes := make([]v1.Node, len(tc.nodes))
			for i, n := range tc.nodes {
				nodes[i] = *n
			}
			// The decision is the images' intersection: archfilter allows where they run.
			for i := range tc.want {
				tc.want[i].Allowed = tc.want[i].CanRun
			}
			if diff := cmp.Diff(tc.want, groupNodes(nodes, allowed, allowed, tc.images, tc.compat)); diff != "" {
				t.Errorf("groupNodes (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestEventReasonsMatchThePlugin keeps why's list in step with the reasons the plugin records.
func TestEventReasonsMatchThePlugin(t *testing.T) {
	for _, r := range []string{archfilter.EventResolving, archfilter.EventResolved, archfilter.EventResolutionFailed,
		archfilter.EventFailOpen, archfilter.EventInvalidPreference, archfilter.EventInvalidAnnotation} {
		if !slices.Contains(archfilterEventReasons, r) {
			t.Errorf("why does not show events with reason %q", r)
		}
	}
}

// TestForPod resolves with a pod's own pull secret (inspect --for-pod), on the fake clientset.
func TestForPod(t *testing.T) {
	m := registrytest.NewMemory(t, registrytest.WithBasicAuth("puller", "pw"))
	fx := pushFixtures(t, m)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	auth := base64.StdEncoding.EncodeToString([]byte("puller:pw"))
	client := fake.NewClientset(
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "regcred"}}}},
		&v1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "shop"},
			Type:       v1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, fx.host, auth))},
		},
	)
	connect := func() (kubernetes.Interface, string, error) { return client, "shop", nil }
	for _, tc := range []struct {
		name, pod string
		wantErr   bool
	}{
		{name: "anonymous", wantErr: true},
		{name: "the pod's pull secret", pod: "web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := &registryFlags{insecure: []string{fx.host}, timeout: 10 * time.Second, forPod: tc.pod}
			s, err := reg.newSession(context.Background(), connect)
			if err != nil {
				t.Fatal(err)
			}
			res := s.resolve(context.Background(), fx.multiRef)
			if (res.Err != nil) != tc.wantErr {
				t.Errorf("resolve: err %v, want error: %v", res.Err, tc.wantErr)
			}
		})
	}
	reg := &registryFlags{forPod: "gone", timeout: time.Second}
	if _, err := reg.newSession(context.Background(), connect); err == nil || !strings.Contains(err.Error(), "shop/gone") {
		t.Errorf("missing pod: got %v, want an error naming it", err)
	}
}

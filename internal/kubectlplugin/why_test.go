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

	v, err := explainPod(context.Background(), client, "shop", "web", reg, platform.NewCompat(platform.ARM64RunsARM))
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
		{Platform: "linux/arm64", Nodes: 1, CanRun: true, Rule: "direct (linux/arm64)"},
		{Platform: "windows/amd64", Nodes: 1},
	}
	if diff := cmp.Diff(want, v.Nodes); diff != "" {
		t.Errorf("nodes (-want,+got):\n%s", diff)
	}
	if len(v.Events) != 1 || v.Events[0].Reason != archfilter.EventResolved {
		t.Errorf("events: got %+v, want only the archfilter one", v.Events)
	}

	// Without the rule nothing is left, and the image that empties the set comes first.
	v, err = explainPod(context.Background(), client, "shop", "web", reg, platform.Compat{})
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

	if _, err := explainPod(context.Background(), client, "shop", "gone", reg, platform.Compat{}); err == nil || !strings.Contains(err.Error(), "shop/gone") {
		t.Errorf("missing pod: got %v, want an error naming it", err)
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

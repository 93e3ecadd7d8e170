package kubectlplugin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/internal/placement/controller"
	"github.com/archfilter/archfilter/internal/placement/webhook"
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

// TestFrontEnds: which front-end decides for a pod is read from the cluster, and
// said how; where the cluster does not say, the answer is unknown and names the flag.
func TestFrontEnds(t *testing.T) {
	const defaultProfile = `profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: ArchFilter
`
	const secondaryProfile = `profiles:
- schedulerName: archfilter-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: ArchFilter
`
	webhookConfig := func(selector *metav1.LabelSelector) *admissionregistrationv1.MutatingWebhookConfiguration {
		return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "archfilter-placement"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: placementWebhookName, NamespaceSelector: selector}}}
	}
	optedOut := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "archfilter.io/placement", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"}}}}
	forbid := func(resource string) func(*fake.Clientset) {
		return func(c *fake.Clientset) {
			c.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC: access denied"))
			})
		}
	}
	pod := func(scheduler string, mutate ...func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"}, Spec: v1.PodSpec{SchedulerName: scheduler}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	event := func(reason, message, by string) v1.Event {
		return v1.Event{InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web", UID: "uid-web"},
			Reason: reason, Message: message, ReportingController: by}
	}
	for _, tc := range []struct {
		name    string
		objs    []runtime.Object
		react   func(*fake.Clientset)
		flagged []string
		pod     *v1.Pod
		events  []v1.Event
		want    string
		how     []string
	}{
		{
			name: "the default scheduler's profile runs ArchFilter, by the deployed configuration",
			objs: []runtime.Object{configMap("kube-system", "archfilter-scheduler-config", ConfigLabelScheduler, "config.yaml", defaultProfile)},
			pod:  pod("default-scheduler"), want: frontScheduler,
			how: []string{"ArchFilter runs in profile default-scheduler of ConfigMap kube-system/archfilter-scheduler-config"},
		},
		{
			name: "an empty schedulerName is the default scheduler's",
			objs: []runtime.Object{configMap("kube-system", "c", ConfigLabelScheduler, "config.yaml", defaultProfile)},
			pod:  pod(""), want: frontScheduler, how: []string{"profile default-scheduler"},
		},
		{
			name: "nothing deployed, nothing recorded: not known, and the flag is named",
			pod:  pod("default-scheduler"), want: frontUnknown,
			how: []string{"no ConfigMap labelled archfilter.io/config=scheduler", "no placement mode is installed", "--scheduler-name default-scheduler"},
		},
		{
			name:  "RBAC denies the configuration: not known, said so",
			react: forbid("configmaps"),
			pod:   pod("default-scheduler"), want: frontUnknown,
			how: []string{"the deployed configuration could not be read", "forbidden", "--scheduler-name default-scheduler"},
		},
		{
			name: "RBAC denies the webhook configurations: not known, said so",
			objs: []runtime.Object{configMap("kube-system", "c", ConfigLabelScheduler, "config.yaml", secondaryProfile)}, react: forbid("mutatingwebhookconfigurations"),
			pod: pod("default-scheduler"), want: frontUnknown,
			how: []string{"runs no ArchFilter profile", "whether the placement mode decides is not known", "MutatingWebhookConfiguration could not be read"},
		},
		{
			name: "the scheduler recorded ArchFilter's event on the pod",
			pod:  pod("default-scheduler"), events: []v1.Event{event(archfilter.EventResolved, "Images of the pod run on linux/amd64", "default-scheduler")},
			want: frontScheduler, how: []string{"scheduler default-scheduler recorded ArchFilter's event ImagePlatformsResolved on the pod"},
		},
		{
			name:   "FailedScheduling with ArchFilter's aggregated reason",
			pod:    pod("default-scheduler"),
			events: []v1.Event{event("FailedScheduling", "0/4 nodes are available: 4 node(s) didn't match the platforms of the pod's images (linux/riscv64). preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.", "default-scheduler")},
			want:   frontScheduler, how: []string{"ArchFilter's reason in its FailedScheduling"},
		},
		{
			name:   "FailedScheduling with ArchFilter's per-platform reason",
			pod:    pod("default-scheduler"),
			events: []v1.Event{event("FailedScheduling", `0/4 nodes are available: 2 node(s) didn't match the platforms of the pod's images (linux/riscv64): container "app" (r/app:v1) does not run on linux/amd64.`, "default-scheduler")},
			want:   frontScheduler, how: []string{"ArchFilter's reason in its FailedScheduling"},
		},
		{
			name:   "another scheduler's FailedScheduling says nothing of ArchFilter",
			pod:    pod("default-scheduler"),
			events: []v1.Event{event("FailedScheduling", "0/4 nodes are available: 4 Insufficient cpu.", "default-scheduler")},
			want:   frontUnknown,
		},
		{
			name:    "--scheduler-name names it",
			flagged: []string{"default-scheduler"},
			pod:     pod("default-scheduler"), want: frontScheduler, how: []string{"--scheduler-name names default-scheduler"},
		},
		{
			name: "the placement mode's decision on the pod",
			pod:  pod("default-scheduler", func(p *v1.Pod) { p.Annotations = map[string]string{annotations.Decision: `{"outcome":"constrained"}`} }),
			want: frontPlacement, how: []string{"annotation archfilter.io/decision"},
		},
		{
			name: "the placement mode's scheduling gate on the pod",
			pod:  pod("default-scheduler", func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "archfilter.io/placement"}} }),
			want: frontPlacement, how: []string{"scheduling gate archfilter.io/placement"},
		},
		{
			name: "the webhook is installed and the scheduler runs no ArchFilter profile",
			objs: []runtime.Object{configMap("kube-system", "c", ConfigLabelScheduler, "config.yaml", secondaryProfile), webhookConfig(optedOut)},
			pod:  pod("default-scheduler"), want: frontPlacement,
			how: []string{"MutatingWebhookConfiguration archfilter-placement is installed", "scheduler default-scheduler runs no ArchFilter profile", "archfilter-scheduler"},
		},
		{
			name: "the webhook does not select the namespace, the scheduler runs no ArchFilter: not archfilter's",
			objs: []runtime.Object{configMap("kube-system", "c", ConfigLabelScheduler, "config.yaml", secondaryProfile), webhookConfig(optedOut),
				&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"archfilter.io/placement": "disabled"}}}},
			pod: pod("default-scheduler"), want: frontNone, how: []string{"does not select namespace shop"},
		},
		{
			name: "a scheduler without ArchFilter and no placement mode: not archfilter's",
			objs: []runtime.Object{configMap("kube-system", "c", ConfigLabelScheduler, "config.yaml", secondaryProfile)},
			pod:  pod("default-scheduler"), want: frontNone,
			how: []string{"scheduler default-scheduler runs no ArchFilter profile", "no placement mode is installed"},
		},
		{
			name: "the webhook is installed, the scheduler's profiles are not known",
			objs: []runtime.Object{webhookConfig(nil)},
			pod:  pod("default-scheduler"), want: frontUnknown, how: []string{"is installed", "--scheduler-name default-scheduler"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objs...)
			if tc.react != nil {
				tc.react(client)
			}
			dec := &decisionFlags{}
			cmd := &cobra.Command{}
			dec.add(cmd)
			if tc.flagged != nil {
				if err := cmd.Flags().Set("scheduler-name", strings.Join(tc.flagged, ",")); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			fe := findFrontEnds(ctx, client, dec, clusterNamespaces(ctx, client))
			got := fe.of(tc.pod, tc.events)
			if got.By != tc.want {
				t.Errorf("decided by %q, want %q (%s)", got.By, tc.want, got.How)
			}
			for _, s := range tc.how {
				if !strings.Contains(got.How, s) {
					t.Errorf("how %q lacks %q", got.How, s)
				}
			}
		})
	}
}

// TestFrontEndNamesMatch keeps what why reads in step with what the plugin and
// the placement mode write.
func TestFrontEndNamesMatch(t *testing.T) {
	if placementWebhookName != webhook.WebhookName {
		t.Errorf("placementWebhookName %q, the placement mode registers %q", placementWebhookName, webhook.WebhookName)
	}
	for _, r := range []string{archfilter.EventResolving, archfilter.EventResolved, archfilter.EventResolutionFailed,
		archfilter.EventFailOpen, archfilter.EventInvalidPreference, archfilter.EventInvalidAnnotation, archfilter.EventDaemonSetMismatch} {
		if !slices.Contains(pluginEventReasons, r) {
			t.Errorf("pluginEventReasons lacks %q", r)
		}
	}
	for _, r := range []string{controller.ReasonPlaced, controller.ReasonFailedOpen, controller.ReasonRejected, controller.ReasonUnmergeable, controller.ReasonGateRemoved} {
		if !slices.Contains(placementEventReasons, r) {
			t.Errorf("placementEventReasons lacks %q", r)
		}
	}
	for _, reason := range []string{archfilter.ReasonPlatformMismatch, archfilter.ReasonWaiting} {
		if !slices.ContainsFunc(archfilterFailedScheduling, func(s string) bool { return strings.Contains(reason, s) }) {
			t.Errorf("archfilterFailedScheduling does not recognise the plugin's reason %q", reason)
		}
	}
}

// TestWhyVerdicts: why ends with one verdict, and exits as report --running does for
// the same pod: 1 when it is bound where it cannot run (or runs nowhere), 2 when that
// could not be answered, 0 otherwise.
func TestWhyVerdicts(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	const secondaryProfile = "profiles:\n- schedulerName: archfilter-scheduler\n  plugins:\n    multiPoint:\n      enabled:\n      - name: ArchFilter\n"
	pod := func(nodeName string, images []string, mutate ...func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"}, Spec: podSpec(images...)}
		p.Spec.NodeName = nodeName
		if nodeName != "" {
			p.Status.Phase = v1.PodRunning
		}
		for _, mut := range mutate {
			mut(p)
		}
		return p
	}
	skip := func(p *v1.Pod) { p.Annotations = map[string]string{annotations.Skip: "true"} }
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		objs   []runtime.Object
		kind   string
		code   int
		text   []string
		absent []string
	}{
		{
			name: "bound where its images run",
			pod:  pod("a1", []string{fx.multiRef}), kind: verdictRuns,
			text: []string{"bound to node a1 (linux/amd64), where its images run"},
		},
		{
			name: "bound where it cannot run",
			pod:  pod("r1", []string{fx.amdRef}), kind: verdictCannotRun, code: ExitFailed,
			text: []string{`bound to node r1 (linux/arm64), where it cannot run: container "c0" (` + fx.amdRef + `) runs on linux/amd64, not on linux/arm64`},
		},
		{
			name: "bound, and its container failed with exec format error",
			pod: pod("r1", []string{fx.multiRef}, func(p *v1.Pod) {
				p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c0", LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					Reason: "StartError", ExitCode: 128, Message: `exec: "/app": exec format error`}}}}
			}),
			kind: verdictCannotRun, code: ExitFailed, text: []string{"where it cannot run", "exec format error"},
		},
		{
			name: "bound where it cannot run, but archfilter leaves it alone: not checked",
			pod:  pod("r1", []string{fx.amdRef}, skip), kind: verdictNotArchFilters,
			text: []string{"not archfilter's: not in its scope (annotation archfilter.io/skip); bound to node r1 (linux/arm64)"},
		},
		{
			name: "bound to a node the cluster does not list",
			pod:  pod("gone", []string{fx.multiRef}), kind: verdictUnknown, code: ExitInputError,
			text: []string{"bound to node gone, which the cluster does not list"},
		},
		{
			name: "Pending: its images share no platform",
			pod:  pod("", []string{fx.amdRef, fx.armRef}), kind: verdictPending, code: ExitFailed,
			text: []string{`Pending because its images share no platform: container "c1" (` + fx.armRef + `) runs on linux/arm/v7 only`},
		},
		{
			name: "Pending: no node runs its images",
			pod:  pod("", []string{fx.armRef}), kind: verdictPending, code: ExitFailed,
			text: []string{"Pending because none of the cluster's nodes runs its images: they run on linux/arm/v7; the nodes are linux/amd64 (1), linux/arm64 (1)"},
		},
		{
			name: "Pending: the scheduler found no room where its images run",
			pod:  pod("", []string{fx.multiRef}),
			objs: []runtime.Object{&v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "shop"}, Reason: "FailedScheduling", Type: v1.EventTypeWarning,
				InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web", UID: "uid-web"}, ReportingController: "default-scheduler",
				Message: "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."}},
			kind:   verdictPending,
			text:   []string{"Pending because the scheduler found no node for it, though its images run on linux/amd64, linux/arm64: 0/2 nodes are available: 2 Insufficient cpu"},
			absent: []string{"preemption"},
		},
		{
			name: "Pending: the placement mode holds it",
			pod:  pod("", []string{fx.multiRef}, func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "archfilter.io/placement"}} }),
			kind: verdictPending, text: []string{"Pending because the placement mode holds it (scheduling gate archfilter.io/placement)"},
		},
		{
			name: "Pending: an image could not be resolved",
			pod:  pod("", []string{fx.multiRef, fx.host + "/missing:v1"}), kind: verdictPending, code: ExitInputError,
			text: []string{"where it can run is not known: " + fx.host + "/missing:v1 could not be resolved"},
		},
		{
			name: "not archfilter's: out of its scope",
			pod:  pod("", []string{fx.amdRef, fx.armRef}, skip), kind: verdictNotArchFilters,
			text: []string{"not archfilter's: not in its scope (annotation archfilter.io/skip)"},
		},
		{
			name: "not archfilter's: a scheduler without ArchFilter, and no placement mode",
			pod:  pod("", []string{fx.multiRef}, func(p *v1.Pod) { p.Spec.SchedulerName = "default-scheduler" }),
			objs: []runtime.Object{configMap("kube-system", "archfilter-scheduler-config", ConfigLabelScheduler, "config.yaml", secondaryProfile)},
			kind: verdictNotArchFilters,
			text: []string{"not archfilter's: scheduler default-scheduler runs no ArchFilter profile (ConfigMap kube-system/archfilter-scheduler-config names the profiles that run ArchFilter: archfilter-scheduler), and no placement mode is installed"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]runtime.Object{tc.pod, node("a1", "linux", "amd64"), node("r1", "linux", "arm64")}, tc.objs...)
			client := fake.NewClientset(objs...)
			reg := &registryFlags{insecure: []string{fx.host}, timeout: 10 * time.Second}
			v, err := explainPod(context.Background(), client, "shop", "web", reg, testDecider(t))
			if err != nil {
				t.Fatal(err)
			}
			if v.Verdict.Kind != tc.kind {
				t.Errorf("verdict %q (%s), want %q", v.Verdict.Kind, v.Verdict.Text, tc.kind)
			}
			if got := ExitCode(whyStatus(v)); got != tc.code {
				t.Errorf("exit status %d, want %d (%s)", got, tc.code, v.Verdict.Text)
			}
			var out strings.Builder
			if err := printWhy(genericiooptions.IOStreams{Out: &out}, outputTable, v); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "Verdict: ") {
				t.Errorf("the last line is not the verdict:\n%s", out.String())
			}
			for _, s := range tc.text {
				if !strings.Contains(last, s) {
					t.Errorf("verdict %q lacks %q", last, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(last, s) {
					t.Errorf("verdict %q has %q", last, s)
				}
			}
			// report --running judges the same pod the same way.
			if tc.pod.Spec.NodeName != "" {
				running, err := buildRunning(context.Background(), client, "shop", reg, testDecider(t))
				if err != nil {
					t.Fatal(err)
				}
				if flagged := len(running.Findings) > 0; flagged != (tc.kind == verdictCannotRun) {
					t.Errorf("report --running flags the pod: %v; why's verdict: %s", flagged, v.Verdict.Text)
				}
				if ExitCode(runningStatus(running)) != tc.code && tc.kind != verdictUnknown {
					t.Errorf("report --running exits %d, why %d", ExitCode(runningStatus(running)), tc.code)
				}
			}
		})
	}
}

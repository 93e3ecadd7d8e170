package kubectlplugin

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/platform"
)

// TestRunning runs report --running's check against client-go's fake clientset and
// the in-memory registry: pods of a Deployment (through its ReplicaSet), a CronJob
// (through its Job), a DaemonSet and a bare pod, on nodes that can and cannot run them.
func TestRunning(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	owned := func(name, kind, owner string) metav1.ObjectMeta {
		meta := metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name)}
		if kind != "" {
			meta.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: owner, Controller: ptr.To(true)}}
		}
		return meta
	}
	pod := func(meta metav1.ObjectMeta, nodeName string, images ...string) *v1.Pod {
		return &v1.Pod{ObjectMeta: meta, Spec: func() v1.PodSpec { s := podSpec(images...); s.NodeName = nodeName; return s }(),
			Status: v1.PodStatus{Phase: v1.PodRunning}}
	}
	lying := pod(owned("nightly-1-abc", "Job", "nightly-1"), "r1", fx.multiRef)
	lying.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c0", LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		Reason: "StartError", ExitCode: 128, Message: `exec: "/job": exec format error`}}}}
	// web's tag moved: it pointed to an index for both platforms, which its pod on the
	// arm64 node still runs, and now points to an amd64-only image.
	before := m.Fixtures(t).Index("moving:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	moved := m.Fixtures(t).Image("moving:v1", registrytest.Docker, "linux/amd64")
	web := pod(owned("web-1", "ReplicaSet", "web-5c4"), "r1", moved.Ref)
	web.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c0", Image: moved.Ref, ImageID: before.Repository + "@" + before.Digest,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	skipped := pod(owned("tool", "", ""), "a1", fx.armRef)
	skipped.Annotations = map[string]string{annotations.Skip: "true"}
	client := fake.NewClientset(
		node("a1", "linux", "amd64"), node("r1", "linux", "arm64"),
		&appsv1.ReplicaSet{ObjectMeta: owned("api-7d9", "Deployment", "api")},
		&batchv1.Job{ObjectMeta: owned("nightly-1", "CronJob", "nightly")},
		pod(owned("api-7d9-x", "ReplicaSet", "api-7d9"), "a1", fx.armRef),
		pod(owned("api-7d9-y", "ReplicaSet", "api-7d9"), "r1", fx.armRef),
		lying, web,
		pod(owned("agent-z", "DaemonSet", "agent"), "r1", fx.multiRef, fx.amdRef),
		pod(owned("debug", "", ""), "r1", fx.host+"/missing:v1"),
		pod(owned("pending", "", ""), "", fx.amdRef),
		skipped,
		&v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "shop"}, Reason: "Failed", Message: "Error: exec format error",
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "tool", UID: "uid-tool", FieldPath: "spec.containers{c0}"}},
	)
	reg := &registryFlags{insecure: []string{fx.host}, timeout: 10 * time.Second}
	v, err := buildRunning(context.Background(), client, "shop", reg, testDecider(t, platform.ARM64RunsARM))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range v.Findings {
		got = append(got, strings.Join([]string{r.Kind + "/" + r.Name, r.Pod, r.Node, r.NodePlatform, r.Finding, r.Container, r.Image, r.ImagePlatforms, r.Skipped, r.NotEvicted}, " "))
	}
	// The lying image is never to be evicted (its replacement would fail on arm64
	// again), the DaemonSet's and the skipped pod's neither; the Deployment's is.
	want := []string{
		"CronJob/nightly nightly-1-abc r1 linux/arm64 exec-format-error c0 " + fx.multiRef + " linux/amd64,linux/arm64  image-lies",
		"DaemonSet/agent agent-z r1 linux/arm64 node-cannot-run c1 " + fx.amdRef + " linux/amd64 DaemonSet pod (daemonSetPolicy Skip) out-of-scope",
		"Deployment/api api-7d9-x a1 linux/amd64 node-cannot-run c0 " + fx.armRef + " linux/arm/v7,linux/arm64  ",
		"Pod/tool tool a1 linux/amd64 exec-format-error c0 " + fx.armRef + "  annotation archfilter.io/skip out-of-scope",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want,+got):\n%s", diff)
	}
	if v.Pods != 7 {
		t.Errorf("%d bound pods checked, want 7 (not the pending one)", v.Pods)
	}
	// The moved tag is information about web-1, which runs what it started with.
	wantNotes := []runningNote{{Namespace: "shop", Pod: "web-1", Container: "c0", Image: moved.Ref, Note: "tag-moved",
		Text: "the tag now points to an image without linux/arm64 (it runs on linux/amd64); the pod runs " + before.Repository + "@" + before.Digest + ", which has it"}}
	if diff := cmp.Diff(wantNotes, v.Notes); diff != "" {
		t.Errorf("notes (-want,+got):\n%s", diff)
	}
	if len(v.Errors) != 1 || !strings.Contains(v.Errors[0], "pod shop/debug") || !strings.Contains(v.Errors[0], "missing:v1") {
		t.Errorf("errors %q: want the debug pod's unresolved image", v.Errors)
	}
	if got := ExitCode(runningStatus(v)); got != ExitInputError {
		t.Errorf("exit status %d, want %d (an image could not be resolved)", got, ExitInputError)
	}
	if got := ExitCode(runningStatus(&runningView{Pods: 1, Findings: v.Findings})); got != ExitFailed {
		t.Errorf("exit status %d, want %d (misplaced pods)", got, ExitFailed)
	}
	if got := ExitCode(runningStatus(&runningView{Pods: 1})); got != 0 {
		t.Errorf("exit status %d, want 0", got)
	}
	// The plugin reads what it needs: secrets by name, the ReplicaSet and Job of
	// the pods it reports, events of pods by a field selector; nothing is listed
	// but nodes, pods and events.
	for _, a := range client.Actions() {
		res, verb := a.GetResource().Resource, a.GetVerb()
		switch {
		case verb == "list" && (res == "nodes" || res == "pods" || res == "events"):
		case verb == "get" && (res == "replicasets" || res == "jobs" || res == "secrets" || res == "serviceaccounts" || res == "namespaces"):
		default:
			t.Errorf("the check did %s on %s", verb, res)
		}
		if l, ok := a.(k8stesting.ListAction); ok && res != "nodes" && l.GetListRestrictions().Fields.Empty() {
			t.Errorf("%s listed without a field selector", res)
		}
	}

	var table strings.Builder
	if err := printRunning(&table, outputTable, v); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Deployment/shop/api", "a1 (linux/amd64)", fx.armRef + " runs on linux/arm/v7,linux/arm64"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("the table lacks %q:\n%s", s, table.String())
		}
	}
	var js strings.Builder
	if err := printRunning(&js, outputJSON, v); err != nil {
		t.Fatal(err)
	}
	var back runningView
	if err := json.Unmarshal([]byte(js.String()), &back); err != nil || len(back.Findings) != len(want) || back.Findings[0].Finding != "exec-format-error" {
		t.Errorf("JSON does not round-trip (%v):\n%s", err, js.String())
	}
	var out strings.Builder
	if err := printRunning(&out, outputCSV, v); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil || len(records) != 1+len(want) || records[0][6] != "finding" {
		t.Errorf("CSV (%v): want a header and %d rows:\n%s", err, len(want), out.String())
	}
}

// TestRunningEmptyAndStatus: the table without findings, and how report combines its
// two exit statuses.
func TestRunningEmptyAndStatus(t *testing.T) {
	var empty runningView
	var out strings.Builder
	printRunningTable(&out, &empty)
	if !strings.HasPrefix(out.String(), "No bound pod is on a node that cannot run it (0 checked)") {
		t.Errorf("empty table: %q", out.String())
	}
	if got := ExitCode(worstStatus(&ExitError{Code: ExitFailed}, &ExitError{Code: ExitInputError})); got != ExitInputError {
		t.Errorf("worstStatus: %d, want %d", got, ExitInputError)
	}
	if got := ExitCode(worstStatus(nil, &ExitError{Code: ExitFailed})); got != ExitFailed {
		t.Errorf("worstStatus: %d, want %d", got, ExitFailed)
	}
}

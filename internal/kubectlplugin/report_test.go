package kubectlplugin

import (
	"context"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/platform"
)

func podSpec(images ...string) v1.PodSpec {
	var spec v1.PodSpec
	for i, img := range images {
		spec.Containers = append(spec.Containers, v1.Container{Name: "c" + string(rune('0'+i)), Image: img})
	}
	return spec
}

// TestReport runs against client-go's fake clientset (not a real apiserver) and the
// in-memory registry.
func TestReport(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "shop"} }
	owned := meta("nightly-123")
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", UID: "cj", Controller: ptr.To(true)}}
	client := fake.NewClientset(
		node("a1", "linux", "amd64"), node("r1", "linux", "arm64"), node("r2", "linux", "arm64"),
		&appsv1.Deployment{ObjectMeta: meta("web"), Spec: appsv1.DeploymentSpec{Template: v1.PodTemplateSpec{Spec: podSpec(fx.multiRef)}}},
		&appsv1.DaemonSet{ObjectMeta: meta("agent"), Spec: appsv1.DaemonSetSpec{Template: v1.PodTemplateSpec{Spec: podSpec(fx.multiRef, fx.amdRef)}}},
		&batchv1.CronJob{ObjectMeta: meta("nightly"), Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: v1.PodTemplateSpec{Spec: podSpec(fx.armRef)}}}}},
		&batchv1.Job{ObjectMeta: owned, Spec: batchv1.JobSpec{Template: v1.PodTemplateSpec{Spec: podSpec(fx.armRef)}}},
		&v1.Pod{ObjectMeta: meta("debug"), Spec: podSpec(fx.host + "/missing:v1")},
		&v1.Pod{ObjectMeta: owned, Spec: podSpec(fx.amdRef)},
	)
	reg := &registryFlags{insecure: []string{fx.host}, timeout: 10 * time.Second}
	v, err := buildReport(context.Background(), client, "shop", reg, testDecider(t, platform.ARM64RunsARM), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, v.Platforms); diff != "" {
		t.Errorf("platforms (-want,+got):\n%s", diff)
	}
	var got []string
	for _, row := range v.Workloads {
		line := row.Kind + "/" + row.Name
		for _, r := range row.On {
			line += " " + r.Platform + "=" + map[bool]string{true: "yes", false: "no:" + r.Blocking}[r.CanRun]
		}
		got = append(got, line)
	}
	// The table names the first image that could not be resolved and why, shortly.
	unresolved := "cannot resolve " + fx.host + "/missing:v1 (NotFound, HTTP 404)"
	want := []string{
		"Deployment/web linux/amd64=yes linux/arm64=yes",
		"DaemonSet/agent linux/amd64=yes linux/arm64=no:" + fx.amdRef,
		"CronJob/nightly linux/amd64=no:" + fx.armRef + " linux/arm64=yes",
		"Pod/debug linux/amd64=no:" + unresolved + " linux/arm64=no:" + unresolved,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"linux/amd64": 2, "linux/arm64": 2}, v.Totals); diff != "" {
		t.Errorf("totals (-want,+got):\n%s", diff)
	}
	// Secrets are read by name, as the pods name them, never listed or watched.
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "secrets" && a.GetVerb() != "get" {
			t.Errorf("the report did %s on secrets", a.GetVerb())
		}
	}

	if got := ExitCode(reportStatus(v)); got != ExitInputError {
		t.Errorf("exit status %d, want %d: the debug pod's image could not be resolved", got, ExitInputError)
	}
	var table strings.Builder
	if err := printReport(&table, outputTable, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "no: "+unresolved) {
		t.Errorf("the table does not show why the debug pod's image is unresolved (%q):\n%s", unresolved, table.String())
	}

	var out strings.Builder
	if err := printReport(&out, outputCSV, v); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v\n%s", err, out.String())
	}
	if len(records) != 1+len(want)*2 || records[0][0] != "kind" {
		t.Errorf("CSV: %d records, want a header and %d rows:\n%s", len(records), len(want)*2, out.String())
	}
}

package kubectlplugin

import (
	"context"
	"encoding/csv"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/apis/annotations"
	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
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
	if want := "cannot resolve missing:v1 (NotFound, HTTP 404)"; !strings.Contains(table.String(), want) {
		t.Errorf("the table does not show why the debug pod's image is unresolved (%q):\n%s", want, table.String())
	}
	table.Reset()
	if err := printReport(&table, outputWide, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), unresolved) || !strings.Contains(table.String(), "no: "+fx.amdRef) {
		t.Errorf("-o wide does not name the images in full:\n%s", table.String())
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

// TestReportTable: the default table fits a terminal (no line over 120 columns on
// a typical cluster), -o wide has the rest, and every count is one count.
func TestReportTable(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	arm64 := m.Fixtures(t).Image("shop/orders-db:v3", registrytest.OCI, "linux/arm64")
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "shop"} }
	skipped := meta("legacy-batch")
	skipped.Annotations = map[string]string{annotations.Skip: "true"}
	tmpl := func(m metav1.ObjectMeta, images ...string) v1.PodTemplateSpec {
		return v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: m.Annotations}, Spec: podSpec(images...)}
	}
	client := fake.NewClientset(
		node("a1", "linux", "amd64"), node("r1", "linux", "arm64"), node("w1", "windows", "amd64"),
		&appsv1.Deployment{ObjectMeta: meta("checkout-frontend"), Spec: appsv1.DeploymentSpec{Template: tmpl(meta(""), fx.multiRef)}},
		&appsv1.Deployment{ObjectMeta: meta("payments-api"), Spec: appsv1.DeploymentSpec{Template: tmpl(meta(""), fx.amdRef)}},
		&appsv1.DaemonSet{ObjectMeta: meta("node-exporter"), Spec: appsv1.DaemonSetSpec{Template: tmpl(meta(""), fx.multiRef, fx.att.Ref)}},
		&appsv1.StatefulSet{ObjectMeta: meta("orders-db"), Spec: appsv1.StatefulSetSpec{Template: tmpl(meta(""), arm64.Ref)}},
		&appsv1.Deployment{ObjectMeta: skipped, Spec: appsv1.DeploymentSpec{Template: tmpl(skipped, fx.amdRef)}},
		&batchv1.CronJob{ObjectMeta: meta("nightly-report"), Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl(meta(""), fx.amdRef, fx.armRef)}}}},
		&v1.Pod{ObjectMeta: meta("debug-shell"), Spec: podSpec(fx.host + "/shop/debug-tools:v1")},
	)
	reg := &registryFlags{insecure: []string{fx.host}, timeout: 10 * time.Second}
	v, err := buildReport(context.Background(), client, "shop", reg, testDecider(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	decideFronts(v, findFrontEnds(context.Background(), client, nil, nil))

	var table strings.Builder
	if err := printReport(&table, outputTable, v); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n")
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 120 {
			t.Errorf("a line of %d columns (at most 120):\n%s", n, l)
		}
	}
	if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"WORKLOAD", "AMD64", "ARM64", "WINDOWS/AMD64", "WHY"}) {
		t.Errorf("default columns %q", got)
	}
	if strings.Contains(table.String(), fx.host) {
		t.Errorf("the default table names images with their registry:\n%s", table.String())
	}
	for _, want := range []string{
		"Deployment/payments-api", "no common platform: armv7:v1", "cannot resolve shop/debug-tools:v1 (NotFound, HTTP 404)",
		"not checked: annotation archfilter.io/skip", "TOTAL (7 workloads)",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}

	// -A: a NAMESPACE column first, as kubectl's.
	v.allNamespaces = true
	var all strings.Builder
	if err := printReport(&all, outputTable, v); err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(strings.SplitN(all.String(), "\n", 2)[0]); len(got) == 0 || got[0] != "NAMESPACE" || !strings.Contains(all.String(), "shop  ") {
		t.Errorf("-A: want a NAMESPACE column:\n%s", all.String())
	}
	v.allNamespaces = false

	var wide strings.Builder
	if err := printReport(&wide, outputWide, v); err != nil {
		t.Fatal(err)
	}
	header := strings.SplitN(wide.String(), "\n", 2)[0]
	for _, col := range []string{"WORKLOAD", "IMAGES RUN ON", "LINUX/AMD64", "LINUX/ARM64", "WINDOWS/AMD64", "WHY", "DECIDED BY", "DECISION"} {
		if !strings.Contains(header, col) {
			t.Errorf("-o wide lacks the column %s: %q", col, header)
		}
	}
	for _, want := range []string{"no: " + fx.amdRef, "linux/amd64 (from images)", "unknown"} {
		if !strings.Contains(wide.String(), want) {
			t.Errorf("-o wide lacks %q:\n%s", want, wide.String())
		}
	}

	// One count: the table's total, the counts in JSON and the exit status's message.
	want := reportCounts{Workloads: 7, NotChecked: 1, Unresolved: 1, Nowhere: 1, Somewhere: 4,
		CanRun: map[string]int{"linux/amd64": 3, "linux/arm64": 3, "windows/amd64": 0}}
	if diff := cmp.Diff(want, v.Counts); diff != "" {
		t.Errorf("counts (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(want.CanRun, v.Totals); diff != "" {
		t.Errorf("totals (-want,+got):\n%s", diff)
	}
	total := lines[len(lines)-1]
	if strings.HasPrefix(total, "Newer tags") || strings.HasPrefix(total, "  ") {
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.HasPrefix(lines[i], "TOTAL") {
				total = lines[i]
			}
		}
	}
	if got := strings.Fields(total); !slices.Equal(got, strings.Fields("TOTAL (7 workloads) 3 3 0 1 on no node, 1 unresolved, 1 not checked")) {
		t.Errorf("total row %q", total)
	}
	err = reportStatus(v)
	if ExitCode(err) != ExitInputError || !strings.Contains(err.Error(), "1 of 7 workloads") {
		t.Errorf("exit status %d (%v), want 2 and the same 7 workloads", ExitCode(err), err)
	}
}

// TestNewerTagsNeeded: newer tags are looked for only for images that lack a node
// platform the workload could use: its own os/arch constraints allow it, and its
// images are built for its os; an image that lacks nothing gets none.
func TestNewerTagsNeeded(t *testing.T) {
	linux := func(archs ...string) platform.Set {
		var ps []platform.Platform
		for _, a := range archs {
			ps = append(ps, platform.Platform{OS: "linux", Architecture: a})
		}
		return platform.NewSet(ps...)
	}
	nodes := []v1.Node{*node("a1", "linux", "amd64"), *node("r1", "linux", "arm64"), *node("w1", "windows", "amd64")}
	pinned := &v1.Pod{Spec: v1.PodSpec{NodeSelector: map[string]string{v1.LabelArchStable: "amd64"}}}
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		images []workloadImage
		want   []string // image: missing platforms
	}{
		{name: "a multi-arch Linux image lacks nothing (Windows nodes are not for it)", pod: &v1.Pod{},
			images: []workloadImage{{Image: "multi:v1", set: linux("amd64", "arm64")}}},
		{name: "an amd64 image lacks arm64", pod: &v1.Pod{},
			images: []workloadImage{{Image: "amd:v1", set: linux("amd64")}}, want: []string{"amd:v1: linux/arm64"}},
		{name: "pinned to amd64 by its nodeSelector, it needs nothing else", pod: pinned,
			images: []workloadImage{{Image: "amd:v1", set: linux("amd64")}}},
		{name: "a riscv64 image lacks every Linux node platform", pod: &v1.Pod{},
			images: []workloadImage{{Image: "riscv:v1", set: linux("riscv64")}}, want: []string{"riscv:v1: linux/amd64,linux/arm64"}},
		{name: "images not read or not resolved are not searched", pod: &v1.Pod{},
			images: []workloadImage{{Image: "gone:v1", Error: "NotFound"}, {Image: "declared:v1", NotRead: "declared"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, b := range podBlockedImages(tc.images, neededPlatforms(tc.pod, tc.images, nodes), platform.Compat{}, nil) {
				var missing []string
				for _, np := range b.missing {
					missing = append(missing, np.String())
				}
				got = append(got, b.image+": "+strings.Join(missing, ","))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("searched (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestReportWhyNamesThePolicy: a node platform every image runs on but the
// workload's ArchFilterPolicy does not allow is blocked by the policy, not by
// the workload's own constraints (which it has none of).
func TestReportWhyNamesThePolicy(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	meta := metav1.ObjectMeta{Name: "web", Namespace: "shop"}
	client := fake.NewClientset(
		node("a1", "linux", "amd64"), node("r1", "linux", "arm64"),
		&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Template: v1.PodTemplateSpec{Spec: podSpec(fx.multiRef)}}},
	)
	dc := testDecider(t)
	lookup, errs := filePolicies([]*policyv1alpha1.ArchFilterPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "arm-only", Namespace: "shop"}, Spec: policyv1alpha1.ArchFilterPolicySpec{AllowedPlatforms: []string{"linux/arm64"}}},
	}, "")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	dc.policies = lookup
	reg := &registryFlags{insecure: []string{fx.host}, timeout: 10 * time.Second}
	v, err := buildReport(context.Background(), client, "shop", reg, dc, nil)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := printReport(&table, outputTable, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "ArchFilterPolicy shop/arm-only") || strings.Contains(table.String(), blockedByOwnConstraints) {
		t.Errorf("want WHY to name ArchFilterPolicy shop/arm-only, not %q:\n%s", blockedByOwnConstraints, table.String())
	}
}

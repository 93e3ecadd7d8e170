package kubectlplugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/platform"
)

type checkOutputJSON struct {
	Workloads []workloadView
}

func runCheck(t *testing.T, stdin string, args ...string) (checkOutputJSON, string, int) {
	t.Helper()
	stdout, stderr, code := run(t, stdin, append([]string{"check", "-o", "json"}, args...)...)
	var got checkOutputJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("decoding -o json: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	return got, stderr, code
}

func deployment(name string, images ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + ", namespace: shop}\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec:\n      containers:\n")
	for i, img := range images {
		b.WriteString("      - {name: c" + string(rune('0'+i)) + ", image: " + img + "}\n")
	}
	return b.String()
}

// platformsOf rebuilds the Set a decoded workload printed.
func platformsOf(w workloadView) string {
	if w.Platforms.Any {
		return setString(platform.Any())
	}
	ps := make([]platform.Platform, len(w.Platforms.Platforms))
	for i, p := range w.Platforms.Platforms {
		ps[i] = platform.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant, OSVersion: p.OSVersion}
	}
	return setString(platform.NewSet(ps...))
}

func TestCheckPlatformsAndBlockingImage(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	blocked := `apiVersion: v1
kind: Pod
metadata: {name: blocked}
spec:
  initContainers:
  - {name: setup, image: ` + fx.armRef + `}
  containers:
  - {name: app, image: ` + fx.multiRef + `}
  - {name: proxy, image: ` + fx.amdRef + `}
`
	pinned := `apiVersion: batch/v1
kind: Job
metadata: {name: pinned}
spec:
  template:
    spec:
      nodeSelector: {kubernetes.io/arch: arm64}
      restartPolicy: Never
      containers:
      - {name: app, image: ` + fx.amdRef + `}
`
	stdin := deployment("web", fx.multiRef, fx.chart.Ref) + "---\n" + deployment("mixed", fx.multiRef, fx.amdRef) + "---\n" + blocked + "---\n" + pinned

	got, stderr, code := runCheck(t, stdin, "--insecure-registry", fx.host, "-f", "-")
	if code != ExitFailed {
		t.Errorf("exit status %d, want %d; stderr:\n%s", code, ExitFailed, stderr)
	}
	want := []struct{ source, name, platforms string }{
		{"-#1", "web", "linux/amd64,linux/arm64"},
		{"-#2", "mixed", "linux/amd64"},
		{"-#3", "blocked", "none"},
		{"-#4", "pinned", "none"},
	}
	if len(got.Workloads) != len(want) {
		t.Fatalf("got %d workloads, want %d: %+v", len(got.Workloads), len(want), got.Workloads)
	}
	for i, w := range want {
		g := got.Workloads[i]
		if g.Source != w.source || g.Name != w.name || platformsOf(g) != w.platforms {
			t.Errorf("workload %d: got %s %s %s, want %s %s %s", i, g.Source, g.Name, platformsOf(g), w.source, w.name, w.platforms)
		}
	}
	// The init container's arm/v7 image and the multi-arch one share nothing: the second
	// image is the one that empties the intersection, and it is listed first.
	b := got.Workloads[2]
	if !b.Failed || b.Images[0].Container != "app" || !strings.Contains(b.Blocking, fx.multiRef) {
		t.Errorf("blocked: want failed, image of container app named first and in Blocking; got %+v", b)
	}
	if p := got.Workloads[3]; !p.Failed || !strings.Contains(p.Blocking, "own os/arch constraints") {
		t.Errorf("pinned: want the nodeSelector named as what blocks; got %+v", p)
	}
	if got.Workloads[0].Failed || got.Workloads[1].Failed {
		t.Errorf("web and mixed have a common platform and no --platforms: want them to pass: %+v", got.Workloads[:2])
	}
}

func TestCheckRequiredPlatformsAndRun32Bit(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	stdin := deployment("mixed", fx.multiRef, fx.amdRef) + "---\n" + deployment("arm", fx.multiRef, fx.armRef)

	got, _, code := runCheck(t, stdin, "--insecure-registry", fx.host, "-f", "-", "--platforms", "linux/amd64")
	if code != ExitFailed {
		t.Errorf("--platforms linux/amd64: exit status %d, want %d (arm cannot run on amd64)", code, ExitFailed)
	}
	if diff := cmp.Diff([]string{"linux/amd64"}, got.Workloads[1].Unsupported); diff != "" || got.Workloads[0].Failed {
		t.Errorf("unsupported (-want,+got):\n%s\nmixed failed: %v", diff, got.Workloads[0].Failed)
	}

	// Without the rule an arm/v7 image and the multi-arch one share nothing; with it the
	// arm64 nodes run both.
	got, _, _ = runCheck(t, deployment("arm", fx.multiRef, fx.armRef), "--insecure-registry", fx.host, "-f", "-")
	if p := platformsOf(got.Workloads[0]); p != "none" {
		t.Errorf("without --run-32bit: platforms %s, want none", p)
	}
	got, _, code = runCheck(t, deployment("arm", fx.multiRef, fx.armRef), "--insecure-registry", fx.host, "-f", "-", "--run-32bit", "arm64", "--platforms", "linux/arm64")
	if p := platformsOf(got.Workloads[0]); p != "linux/arm64" || code != 0 {
		t.Errorf("--run-32bit arm64: platforms %s, exit status %d; want linux/arm64 and 0", p, code)
	}
}

func TestCheckBadInput(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	cronList := `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: skipped}
  spec: {ports: [{port: 80}]}
- apiVersion: batch/v1
  kind: CronJob
  metadata: {name: nightly}
  spec:
    schedule: "@daily"
    jobTemplate:
      spec:
        template:
          spec:
            restartPolicy: OnFailure
            containers:
            - {name: job, image: ` + fx.multiRef + `}
`
	dir := t.TempDir()
	files := map[string]string{
		"a-list.yaml":    cronList,
		"b-broken.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: [unclosed\n",
		"c-widget.yml":   "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n# only a comment\n",
		"d-web.json":     `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"db","image":"` + fx.amdRef + `"}]}}}}`,
		"notes.txt":      "not a manifest",
		"sub/e-ds.yaml":  strings.Replace(deployment("agent", fx.multiRef), "kind: Deployment", "kind: DaemonSet", 1),
		"sub/f-bad.yaml": "apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: \"many\"}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, stderr, code := runCheck(t, deployment("from-stdin", fx.amdRef), "--insecure-registry", fx.host, "-f", dir, "-f", "-")
	if code != ExitInputError {
		t.Errorf("exit status %d, want %d; stderr:\n%s", code, ExitInputError, stderr)
	}
	var names []string
	for _, w := range got.Workloads {
		names = append(names, w.Kind+"/"+w.Name+"="+platformsOf(w))
	}
	want := []string{"CronJob/nightly=linux/amd64,linux/arm64", "StatefulSet/db=linux/amd64", "DaemonSet/agent=linux/amd64,linux/arm64", "Deployment/from-stdin=linux/amd64"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("workloads (-want,+got):\n%s", diff)
	}
	for _, e := range []string{
		filepath.Join(dir, "b-broken.yaml") + "#1: malformed",
		filepath.Join(dir, "c-widget.yml") + "#1: unknown kind",
		filepath.Join(dir, "sub/f-bad.yaml") + "#1: malformed Deployment",
	} {
		if !strings.Contains(stderr, e) {
			t.Errorf("stderr lacks %q:\n%s", e, stderr)
		}
	}
	if strings.Contains(stderr, "notes.txt") {
		t.Errorf("a directory's non-manifest files should be ignored:\n%s", stderr)
	}
}

func TestCheckEmitAffinity(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	stdout, stderr, code := run(t, deployment("web", fx.multiRef, fx.att.Ref), "check", "--insecure-registry", fx.host, "-f", "-", "--emit-affinity")
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	_, block, ok := strings.Cut(stdout, "---\n")
	if !ok {
		t.Fatalf("no affinity block in:\n%s", stdout)
	}
	var got struct{ Affinity v1.Affinity }
	if err := yaml.UnmarshalStrict([]byte(block), &got); err != nil {
		t.Fatalf("decoding the affinity block: %v\n%s", err, block)
	}
	want := v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: v1.LabelOSStable, Operator: v1.NodeSelectorOpIn, Values: []string{"linux"}},
			{Key: v1.LabelArchStable, Operator: v1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
		}}},
	}}}
	if diff := cmp.Diff(want, got.Affinity); diff != "" {
		t.Errorf("affinity (-want,+got):\n%s", diff)
	}
}

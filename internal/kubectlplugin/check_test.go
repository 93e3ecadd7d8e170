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
	"github.com/archfilter/archfilter/pkg/decision"
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
	if p := got.Workloads[3]; !p.Failed || !strings.Contains(p.Blocking, decision.ReasonOwnConstraintConflict) {
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

// TestCheckDecidesAsArchFilter: check judges each workload by package decision, under
// --args: a declared archfilter.io/platforms stands for images nobody can resolve from
// here (localhost/...), a workload archfilter leaves alone is not resolved and passes,
// and a DaemonSet under daemonSetPolicy Skip is resolved (the scheduler warns by its
// images) but not filtered.
func TestCheckDecidesAsArchFilter(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	argsFile := filepath.Join(t.TempDir(), "args.yaml")
	if err := os.WriteFile(argsFile, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: ArchFilterArgs\nexcludedNamespaces: [infra]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withAnnotations := func(doc, annotations string) string {
		return strings.Replace(doc, "metadata: {labels: {app: x}}", "metadata: {labels: {app: x}, annotations: {"+annotations+"}}", 1)
	}
	daemonSet := strings.Replace(strings.Replace(deployment("agent", fx.amdRef), "kind: Deployment", "kind: DaemonSet", 1), "name: agent", "name: agent", 1)
	docs := strings.Join([]string{
		withAnnotations(deployment("declared", "localhost/tools:v1"), `archfilter.io/platforms: "linux/s390x"`),
		withAnnotations(deployment("skipped", "localhost/tools:v1"), `archfilter.io/skip: "true"`),
		strings.Replace(deployment("infra", "localhost/tools:v1"), "namespace: shop", "namespace: infra", 1),
		daemonSet,
		withAnnotations(deployment("badpref", fx.multiRef), `archfilter.io/preferred-platforms: "linux/arm64=500"`),
		withAnnotations(deployment("baddecl", fx.multiRef), `archfilter.io/platforms: "linux/"`),
	}, "---\n")
	got, stderr, code := runCheck(t, docs, "--insecure-registry", fx.host, "--args", argsFile, "-f", "-", "--platforms", "linux/s390x")
	byName := map[string]workloadView{}
	for _, w := range got.Workloads {
		byName[w.Name] = w
	}
	for _, tc := range []struct {
		name, outcome, platforms string
		failed                   bool
		notRead                  bool
	}{
		{name: "declared", outcome: decision.OutcomeConstrained, platforms: "linux/s390x", notRead: true},
		{name: "skipped", outcome: decision.OutcomeSkipped, platforms: "any", notRead: true},
		{name: "infra", outcome: decision.OutcomeSkipped, platforms: "any", notRead: true},
		// Its image runs on amd64 only: the DaemonSet's pods on s390x nodes fail.
		{name: "agent", outcome: decision.OutcomeSkipped, platforms: "linux/amd64", failed: true},
		{name: "badpref", outcome: decision.OutcomeConstrained, platforms: "linux/amd64,linux/arm64", failed: true},
		{name: "baddecl", outcome: decision.OutcomeRejected, platforms: "none", failed: true, notRead: true},
	} {
		w, ok := byName[tc.name]
		if !ok {
			t.Errorf("%s: not in the output", tc.name)
			continue
		}
		if w.Decision.Outcome != tc.outcome || platformsOf(w) != tc.platforms || w.Failed != tc.failed || (w.Images[0].NotRead != "") != tc.notRead {
			t.Errorf("%s: outcome %s, platforms %s, failed %v, image not read %q; want %s, %s, %v, not read %v",
				tc.name, w.Decision.Outcome, platformsOf(w), w.Failed, w.Images[0].NotRead, tc.outcome, tc.platforms, tc.failed, tc.notRead)
		}
	}
	if d := byName["badpref"].Decision; !strings.Contains(d.Preferred, "ignored annotation archfilter.io/preferred-platforms") {
		t.Errorf("badpref: the invalid preference is not reported: %+v", d)
	}
	if d := byName["baddecl"].Decision; !strings.Contains(d.Message, decision.ReasonInvalidAnnotation) {
		t.Errorf("baddecl: want the invalid annotation named: %+v", d)
	}
	if d := byName["agent"].Decision; d.Skipped != string(decision.SkipDaemonSet) {
		t.Errorf("agent: skipped %q, want %q", d.Skipped, decision.SkipDaemonSet)
	}
	if code != ExitFailed || strings.Contains(stderr, "cannot resolve") {
		t.Errorf("exit status %d, want %d (nothing left unanswered: no localhost image was resolved); stderr:\n%s", code, ExitFailed, stderr)
	}

	// The 32-bit rule said twice is refused.
	if err := os.WriteFile(argsFile, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: ArchFilterArgs\nrun32BitImagesOn: [arm64]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, docs, "check", "-f", "-", "--args", argsFile, "--run-32bit", "arm64"); code != ExitInputError || !strings.Contains(stderr, "--run-32bit") {
		t.Errorf("--run-32bit with run32BitImagesOn in --args: exit %d, stderr %q; want %d naming the flag", code, stderr, ExitInputError)
	}
	// A field of --args that is wrong is named by its path.
	if err := os.WriteFile(argsFile, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: ArchFilterArgs\ndaemonSetPolicy: Sometimes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, docs, "check", "-f", "-", "--args", argsFile); code != ExitInputError || !strings.Contains(stderr, "args.daemonSetPolicy") {
		t.Errorf("invalid --args: exit %d, stderr %q; want %d naming args.daemonSetPolicy", code, stderr, ExitInputError)
	}
}

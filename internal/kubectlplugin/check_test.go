package kubectlplugin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
)

type checkOutputJSON struct {
	Workloads      []workloadView
	CheckedAgainst checkTarget
}

// withoutCluster makes the test's check run as in a CI job without a cluster: no
// kubeconfig, not in a pod.
func withoutCluster(t *testing.T) {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-kubeconfig"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
}

func runCheck(t *testing.T, stdin string, args ...string) (checkOutputJSON, string, int) {
	t.Helper()
	if !slices.Contains(args, "--kubeconfig") {
		withoutCluster(t)
	}
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
	withoutCluster(t)
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

	withoutCluster(t)
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

// stubCluster serves what check reads of a cluster (its version, its nodes, no
// archfilter configuration) and returns a kubeconfig whose context "stub" names it.
func stubCluster(t *testing.T, nodes ...*v1.Node) string {
	t.Helper()
	write := func(w http.ResponseWriter, obj any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(obj)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/version":
			write(w, map[string]string{"major": "1", "minor": "35", "gitVersion": "v1.35.0"})
		case "/api/v1/nodes":
			list := &v1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}}
			for _, n := range nodes {
				list.Items = append(list.Items, *n)
			}
			write(w, list)
		case "/api/v1/configmaps":
			write(w, &v1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return writeTestKubeconfig(t, srv.URL)
}

// TestCheckAgainstTheCluster: with a cluster that answers, a workload none of whose
// platforms is a node's fails, naming both; without one, or with one without nodes,
// check says on its summary line what it could not check. --platforms wins.
func TestCheckAgainstTheCluster(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	riscv := m.Fixtures(t).Image("riscv:v1", registrytest.OCI, "linux/riscv64")
	docs := deployment("riscv", riscv.Ref) + "---\n" + deployment("web", fx.multiRef)
	unlabelled := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "new"}}
	cluster := stubCluster(t, node("a1", "linux", "amd64"), node("r1", "linux", "arm64"), node("r2", "linux", "arm64"), unlabelled)
	const only = "checked only that each workload's images share a platform"

	t.Run("a cluster with nodes", func(t *testing.T) {
		got, stderr, code := runCheck(t, docs, "--insecure-registry", fx.host, "-f", "-", "--kubeconfig", cluster)
		if code != ExitFailed {
			t.Errorf("exit status %d, want %d: no node runs linux/riscv64; stderr:\n%s", code, ExitFailed, stderr)
		}
		want := checkTarget{Source: targetCluster, Platforms: []string{"linux/amd64", "linux/arm64"}, Context: "stub",
			Summary: `checked against the platforms of the cluster's nodes (context "stub"): linux/amd64, linux/arm64`}
		if diff := cmp.Diff(want, got.CheckedAgainst, cmpopts.IgnoreUnexported(checkTarget{})); diff != "" {
			t.Errorf("checkedAgainst (-want,+got):\n%s", diff)
		}
		r, w := got.Workloads[0], got.Workloads[1]
		if !r.Failed || !strings.Contains(r.Nowhere, "it runs on linux/riscv64") || !strings.Contains(r.Nowhere, "the nodes on linux/amd64, linux/arm64") {
			t.Errorf("riscv: want failed, naming its platform and the nodes'; got failed %v, nowhere %q", r.Failed, r.Nowhere)
		}
		if w.Failed || w.Nowhere != "" {
			t.Errorf("web runs on both node platforms: failed %v, nowhere %q", w.Failed, w.Nowhere)
		}

		stdout, _, _ := run(t, docs, "check", "--insecure-registry", fx.host, "-f", "-", "--kubeconfig", cluster)
		for _, line := range []string{
			"FAIL: no node of the cluster runs it: it runs on linux/riscv64, the nodes on linux/amd64, linux/arm64",
			want.Summary,
		} {
			if !strings.Contains(stdout, line) {
				t.Errorf("the table does not say %q:\n%s", line, stdout)
			}
		}
	})

	t.Run("--platforms wins", func(t *testing.T) {
		got, stderr, code := runCheck(t, deployment("riscv", riscv.Ref), "--insecure-registry", fx.host, "-f", "-", "--kubeconfig", cluster, "--platforms", "linux/riscv64")
		if code != 0 || got.CheckedAgainst.Source != targetPlatforms || got.CheckedAgainst.Summary != "checked against --platforms linux/riscv64" {
			t.Errorf("exit status %d, checked against %+v; want 0 and --platforms; stderr:\n%s", code, got.CheckedAgainst, stderr)
		}
	})

	t.Run("no cluster", func(t *testing.T) {
		got, stderr, code := runCheck(t, docs, "--insecure-registry", fx.host, "-f", "-")
		if code != 0 {
			t.Errorf("exit status %d, want 0 (nothing says riscv64 cannot run); stderr:\n%s", code, stderr)
		}
		if c := got.CheckedAgainst; c.Source != targetNone || !strings.HasPrefix(c.Summary, "no cluster, no --platforms: "+only) || !strings.Contains(c.Reason, "no kubeconfig") {
			t.Errorf("checkedAgainst %+v: want none, the summary saying what was not checked, and why", c)
		}
		stdout, stderr, _ := run(t, docs, "check", "--insecure-registry", fx.host, "-f", "-")
		// The summary line follows the table's last row.
		lines := strings.Split(stdout, "\n")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "no cluster, no --platforms: "+only) })
		if i < 1 || !strings.Contains(lines[i-1], "Deployment/shop/web") {
			t.Errorf("want the summary saying what was not checked right after the table:\n%s", stdout)
		}
		if !strings.Contains(stderr, "info: no kubeconfig") {
			t.Errorf("stderr does not say why no cluster was read:\n%s", stderr)
		}
	})

	t.Run("a cluster without nodes", func(t *testing.T) {
		empty := stubCluster(t)
		got, stderr, code := runCheck(t, docs, "--insecure-registry", fx.host, "-f", "-", "--kubeconfig", empty)
		if code != 0 || got.CheckedAgainst.Source != targetNone || !strings.HasPrefix(got.CheckedAgainst.Summary, `no node in the cluster (context "stub"), no --platforms: `+only) {
			t.Errorf("exit status %d, checked against %+v; want 0 and a summary saying the cluster has no nodes; stderr:\n%s", code, got.CheckedAgainst, stderr)
		}
	})

	t.Run("a cluster named that does not answer", func(t *testing.T) {
		refused := writeTestKubeconfig(t, "http://"+closedPort(t))
		got, stderr, code := runCheck(t, docs, "--insecure-registry", fx.host, "-f", "-", "--kubeconfig", refused)
		if code != ExitInputError || got.CheckedAgainst.Source != targetNone || !strings.Contains(stderr, "no node platform was checked") {
			t.Errorf("exit status %d, checked against %+v; want %d: the cluster asked for could not be read; stderr:\n%s", code, got.CheckedAgainst, ExitInputError, stderr)
		}
	})

	t.Run("--help says so", func(t *testing.T) {
		stdout, _, _ := run(t, "", "check", "--help")
		for _, s := range []string{"no cluster, no --platforms: checked only that each workload's images share", "In CI, give --platforms", "runs on none of", "checkedAgainst"} {
			if !strings.Contains(strings.Join(strings.Fields(stdout), " "), s) {
				t.Errorf("check --help does not say %q:\n%s", s, stdout)
			}
		}
	})
}

// TestCheckMistakesNameTheFix: check's own usage mistakes say what to type instead.
func TestCheckMistakesNameTheFix(t *testing.T) {
	withoutCluster(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "a file without -f", args: []string{"check", "good.yaml"}, want: "check reads files with -f: kubectl archfilter check -f good.yaml"},
		{name: "a second file without -f", args: []string{"check", "-f", "a.yaml", "b.yaml"}, want: "kubectl archfilter check -f a.yaml -f b.yaml"},
		{name: "no file", args: []string{"check"}, want: "check needs the manifests to check: kubectl archfilter check -f FILE|DIR|-"},
		{name: "--platforms without os", args: []string{"check", "-f", "-", "--platforms", "arm64"}, want: `--platforms "arm64": want os/arch[/variant]; did you mean linux/arm64?`},
		{name: "--platforms with an empty element", args: []string{"check", "-f", "-", "--platforms", "linux/amd64,,arm64"}, want: "did you mean linux/amd64,linux/arm64?"},
		{name: "--platforms naming an architecture no runtime knows", args: []string{"check", "-f", "-", "--platforms", "linux/arm46"}, want: `no container runtime knows the architecture "arm46"; did you mean linux/arm64?`},
		{name: "--platforms *", args: []string{"check", "-f", "-", "--platforms", "*"}, want: "name the platforms every workload must run on, e.g. --platforms linux/amd64,linux/arm64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, "", tc.args...)
			if code != ExitInputError || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit status %d, stderr:\n%s\nwant %d and %q", code, stderr, ExitInputError, tc.want)
			}
			if strings.Contains(stderr, "unknown command") {
				t.Errorf("cobra's message instead of the fix:\n%s", stderr)
			}
		})
	}
}

// TestCheckLintsAnnotations: check reports each mistake in a workload's archfilter.io/
// annotations as package decision's LintAnnotations finds it, the one judge the
// plugin and the placement mode use too: warnings below the table, errors fail the
// workload, a syntax error is one (not "no common platform").
func TestCheckLintsAnnotations(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	annotated := func(name, annots string) string {
		return strings.Replace(deployment(name, fx.multiRef), "metadata: {labels: {app: x}}", "metadata: {labels: {app: x}, annotations: {"+annots+"}}", 1)
	}
	onDeployment := strings.Replace(deployment("owner", fx.multiRef), "metadata: {name: owner, namespace: shop}", "metadata: {name: owner, namespace: shop, annotations: {archfilter.io/skip: \"true\"}}", 1)
	docs := strings.Join([]string{
		annotated("typo", `archfilter.io/platfroms: "linux/arm64"`),
		annotated("skipyes", `archfilter.io/skip: "yes"`),
		annotated("arm46", `archfilter.io/platforms: "linux/arm46"`),
		annotated("syntax", `archfilter.io/platforms: "linux/amd64,,arm64"`),
		onDeployment,
	}, "---\n")
	got, stderr, code := runCheck(t, docs, "--insecure-registry", fx.host, "-f", "-")
	if code != ExitFailed {
		t.Errorf("exit status %d, want %d (two errors); stderr:\n%s", code, ExitFailed, stderr)
	}
	byName := map[string]workloadView{}
	for _, w := range got.Workloads {
		byName[w.Name] = w
	}
	for _, tc := range []struct {
		name, annotation string
		severity         decision.Severity
		failed           bool
		hint             string
	}{
		{name: "typo", annotation: "archfilter.io/platfroms", severity: decision.SeverityWarning, hint: "did you mean archfilter.io/platforms?"},
		{name: "skipyes", annotation: annotations.Skip, severity: decision.SeverityWarning, hint: `did you mean "true"?`},
		{name: "arm46", annotation: annotations.Platforms, severity: decision.SeverityError, failed: true, hint: "did you mean linux/arm64?"},
		{name: "syntax", annotation: annotations.Platforms, severity: decision.SeverityError, failed: true, hint: "did you mean linux/amd64,linux/arm64?"},
		{name: "owner", annotation: annotations.Skip, severity: decision.SeverityWarning, hint: "move it to spec.template.metadata.annotations"},
	} {
		w := byName[tc.name]
		if len(w.Lint) != 1 || w.Lint[0].Annotation != tc.annotation || w.Lint[0].Severity != tc.severity || !strings.Contains(w.Lint[0].Message, tc.hint) || w.Failed != tc.failed {
			t.Errorf("%s: lint %+v, failed %v; want one %s about %s saying %q, failed %v", tc.name, w.Lint, w.Failed, tc.severity, tc.annotation, tc.hint, tc.failed)
		}
	}
	// skip "yes" does not skip the pod: check judges it as archfilter does.
	if d := byName["skipyes"].Decision; d.Outcome != decision.OutcomeConstrained {
		t.Errorf("skipyes: outcome %s, want %s: the scheduler does not skip the pod", d.Outcome, decision.OutcomeConstrained)
	}

	stdout, _, _ := run(t, docs, "check", "--insecure-registry", fx.host, "-f", "-")
	rows := map[string]string{}
	for _, line := range strings.Split(stdout, "\n") {
		for name := range byName {
			if f := strings.Fields(line); len(f) > 1 && f[1] == "Deployment/shop/"+name && strings.HasPrefix(f[0], "-#") {
				rows[name] = line
			}
		}
	}
	for name, want := range map[string]string{
		"typo":   "ok (1 annotation warning below)",
		"arm46":  `FAIL: annotation archfilter.io/platforms "linux/arm46": matches no node`,
		"syntax": `FAIL: annotation archfilter.io/platforms "linux/amd64,,arm64": syntax error`,
	} {
		if !strings.Contains(rows[name], want) {
			t.Errorf("%s: row %q, want %q", name, rows[name], want)
		}
	}
	if strings.Contains(rows["syntax"], "no common platform") {
		t.Errorf("a syntax error reported as no common platform: %q", rows["syntax"])
	}
	for _, want := range []string{"WORKLOAD", "ANNOTATIONS", "Deployment/shop/typo", "warning", "annotation archfilter.io/platfroms is not one archfilter reads"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the findings below the table lack %q:\n%s", want, stdout)
		}
	}
}

package charttest

import (
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite manifests/monitoring/prometheusrule.yaml from the chart's rules")

const (
	rulesFile          = "charts/archfilter/files/prometheus-rules.yaml"
	rulesTestFile      = "charts/archfilter/test/testdata/prometheus-rules.test.yaml"
	monitoringRule     = "manifests/monitoring/prometheusrule.yaml"
	monitoringMonitor  = "manifests/monitoring/servicemonitor.yaml"
	monitoringReader   = "manifests/monitoring/metrics-reader.yaml"
	monitoringDasboard = "manifests/monitoring/grafana-dashboard.json"
)

// ruleFile is a Prometheus rule file.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert  string            `json:"alert"`
			Record string            `json:"record"`
			Expr   string            `json:"expr"`
			Labels map[string]string `json:"labels"`
		} `json:"rules"`
	} `json:"groups"`
}

func readYAML(t *testing.T, rel string, into any) {
	t.Helper()
	if err := yaml.Unmarshal(readFile(t, rel), into); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

// TestMonitoringManifests: manifests/monitoring carries the chart's alerts
// (one source: the chart's rules file), and scrapes and authorizes as the
// chart's ServiceMonitor and metrics reader do.
func TestMonitoringManifests(t *testing.T) {
	var file, rule map[string]any
	readYAML(t, rulesFile, &file)
	readYAML(t, monitoringRule, &rule)
	if diff := cmp.Diff(file["groups"], rule["spec"].(map[string]any)["groups"]); diff != "" {
		if *update {
			rewriteMonitoringRule(t)
		} else {
			t.Errorf("%s differs from %s, its source (-source,+copy); run `go test -run TestMonitoringManifests -update` in charts/archfilter/test:\n%s", monitoringRule, rulesFile, diff)
		}
	}

	objs := mustRender(t, map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}, renderOpts{apiVersions: monitoringAPIs})
	var chartEndpoints any
	for _, u := range of[*unstructured.Unstructured](objs) {
		if u.GetKind() == "ServiceMonitor" {
			chartEndpoints = u.Object["spec"].(map[string]any)["endpoints"]
		}
	}
	var monitor map[string]any
	readYAML(t, monitoringMonitor, &monitor)
	if diff := cmp.Diff(monitor["spec"].(map[string]any)["endpoints"], chartEndpoints); diff != "" {
		t.Errorf("the chart's ServiceMonitor endpoints differ from %s (-manifests,+chart):\n%s", monitoringMonitor, diff)
	}

	readerObjs, err := decodeAll(readFile(t, monitoringReader))
	if err != nil {
		t.Fatal(err)
	}
	var want, got []rbacv1.PolicyRule
	for _, r := range of[*rbacv1.ClusterRole](readerObjs) {
		want = r.Rules
	}
	for _, r := range of[*rbacv1.ClusterRole](objs) {
		if strings.HasSuffix(r.Name, ":metrics-reader") {
			got = r.Rules
		}
	}
	if want == nil || !cmp.Equal(want, got) {
		t.Errorf("metrics reader rules: %s %v, chart %v", monitoringReader, want, got)
	}
}

// rewriteMonitoringRule writes the chart's rule groups into the PrometheusRule
// of manifests/monitoring, keeping that file's header and metadata.
func rewriteMonitoringRule(t *testing.T) {
	t.Helper()
	old := string(readFile(t, monitoringRule))
	head, _, ok := strings.Cut(old, "\nspec:\n")
	if !ok {
		t.Fatalf("%s: no spec", monitoringRule)
	}
	rules := string(readFile(t, rulesFile))
	body := rules[strings.Index(rules, "groups:"):]
	var b strings.Builder
	b.WriteString(head + "\nspec:\n")
	for _, line := range strings.SplitAfter(body, "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	if err := os.WriteFile(repoPath(monitoringRule), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote %s", monitoringRule)
}

// metric is one registration in archfilter's source.
type metric struct {
	histogram bool
	labels    []string
}

// metricPackages are the trees whose packages register archfilter's metrics:
// the scheduler's (pkg/), the placement companion's and the commands'.
var metricPackages = []string{"pkg", "internal", "cmd"}

// registeredMetrics finds every k8s.io/component-base/metrics registration
// under metricPackages (metrics.NewX(&metrics.XOpts{Subsystem, Name}, labels))
// and returns the full names with their labels.
func registeredMetrics(t *testing.T) map[string]metric {
	t.Helper()
	found := map[string]metric{}
	for _, dir := range metricPackages {
		if err := metricsIn(repoPath(dir), found); err != nil {
			t.Fatal(err)
		}
	}
	if len(found) < 10 {
		t.Fatalf("found only %d metric registrations under %v: %v", len(found), metricPackages, found)
	}
	return found
}

// apiserverWebhookMetrics are the API server's admission webhook metrics the
// placement alerts and panels read, as k8s.io/apiserver (this module's
// version) registers them.
func apiserverWebhookMetrics(t *testing.T) map[string]metric {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/apiserver").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/apiserver: %v", err)
	}
	found := map[string]metric{}
	if err := metricsIn(filepath.Join(strings.TrimSpace(string(out)), "pkg", "admission", "metrics"), found); err != nil {
		t.Fatal(err)
	}
	webhook := map[string]metric{}
	for name, m := range found {
		if strings.HasPrefix(name, "apiserver_admission_webhook_") {
			webhook[name] = m
		}
	}
	if len(webhook) < 3 {
		t.Fatalf("k8s.io/apiserver registers %d admission webhook metrics: %v", len(webhook), found)
	}
	return webhook
}

// metricsIn adds the registrations in the Go files under root to found.
func metricsIn(root string, found map[string]metric) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		consts := map[string]string{}
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
			return true
		})
		str := func(e ast.Expr) string {
			switch v := e.(type) {
			case *ast.BasicLit:
				s, _ := strconv.Unquote(v.Value)
				return s
			case *ast.Ident:
				return consts[v.Name]
			}
			return ""
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !strings.HasPrefix(sel.Sel.Name, "New") || len(call.Args) == 0 {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "metrics" {
				return true
			}
			u, ok := call.Args[0].(*ast.UnaryExpr)
			if !ok {
				return true
			}
			opts, ok := u.X.(*ast.CompositeLit)
			if !ok {
				return true
			}
			var namespace, subsystem, name string
			for _, el := range opts.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, _ := kv.Key.(*ast.Ident)
				if key == nil {
					continue
				}
				switch key.Name {
				case "Namespace":
					namespace = str(kv.Value)
				case "Subsystem":
					subsystem = str(kv.Value)
				case "Name":
					name = str(kv.Value)
				}
			}
			var parts []string
			for _, p := range []string{namespace, subsystem, name} {
				if p != "" {
					parts = append(parts, p)
				}
			}
			m := metric{histogram: strings.Contains(sel.Sel.Name, "Histogram")}
			if len(call.Args) > 1 {
				if labels, ok := call.Args[1].(*ast.CompositeLit); ok {
					for _, l := range labels.Elts {
						m.labels = append(m.labels, str(l))
					}
				}
			}
			found[strings.Join(parts, "_")] = m
			return true
		})
		return nil
	})
}

var (
	metricName = regexp.MustCompile(`\b(?:archfilter|apiserver_admission_webhook)_[a-z0-9_]+`)
	// selector matches name{label="...", ...}: the labels a series is selected by.
	selector = regexp.MustCompile(`\b((?:archfilter|apiserver_admission_webhook)_[a-z0-9_]+)\{([^}]*)\}`)
	matcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
	// byLabels matches the labels of "by (a, b)".
	byLabels = regexp.MustCompile(`\bby\s*\(([^)]*)\)`)
)

// checkExpr reports the metrics and labels of a PromQL expression that
// archfilter (or, for apiserver_admission_webhook_*, the API server) does not
// register.
func checkExpr(where, expr string, registered map[string]metric) []string {
	var problems []string
	names := metricName.FindAllString(expr, -1)
	if len(names) == 0 {
		problems = append(problems, where+": names no archfilter (or API server webhook) metric: "+expr)
	}
	var labels []string
	for _, n := range names {
		base := n
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suffix); ok {
				if m, ok := registered[b]; ok && m.histogram {
					base = b
				}
			}
		}
		m, ok := registered[base]
		if !ok {
			problems = append(problems, where+": "+n+" is not registered under "+strings.Join(metricPackages, ", ")+" (nor by the API server's admission webhooks)")
			continue
		}
		labels = append(labels, m.labels...)
		if base != n {
			labels = append(labels, "le")
		}
	}
	// Prometheus' own target labels are fine anywhere.
	labels = append(labels, "job", "instance", "namespace", "pod", "service", "endpoint")
	for _, sel := range selector.FindAllStringSubmatch(expr, -1) {
		for _, mm := range matcher.FindAllStringSubmatch(sel[2], -1) {
			if !slices.Contains(labels, mm[1]) {
				problems = append(problems, where+": "+sel[1]+" has no label "+mm[1])
			}
		}
	}
	for _, by := range byLabels.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(by[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(labels, l) {
				problems = append(problems, where+": by ("+l+"): no such label on "+strings.Join(names, ", "))
			}
		}
	}
	return problems
}

// TestMetricNames: every metric (and label) the alerts and the Grafana
// dashboard name is one archfilter registers (pkg/resolver/metrics.go,
// pkg/resolver/transport/metrics.go, pkg/plugins/archfilter/metrics.go,
// internal/placement/metrics: every package under pkg/, internal/ and cmd/),
// or one of the API server's admission webhook metrics (k8s.io/apiserver), so
// a renamed metric cannot silently empty a panel or disarm an alert.
func TestMetricNames(t *testing.T) {
	registered := registeredMetrics(t)
	ours := maps.Clone(registered)
	maps.Copy(registered, apiserverWebhookMetrics(t))
	var problems []string

	var rules ruleFile
	readYAML(t, rulesFile, &rules)
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			problems = append(problems, checkExpr("alert "+r.Alert, r.Expr, registered)...)
		}
	}
	if n == 0 {
		t.Fatalf("%s: no rules", rulesFile)
	}

	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(readFile(t, monitoringDasboard), &dash); err != nil {
		t.Fatalf("%s: %v", monitoringDasboard, err)
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			problems = append(problems, checkExpr("panel "+p.Title, tg.Expr, registered)...)
			for _, name := range metricName.FindAllString(tg.Expr, -1) {
				used[strings.TrimSuffix(name, "_bucket")] = true
			}
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			problems = append(problems, checkExpr("variable "+v.Name, q["query"].(string), registered)...)
		}
	}
	// The dashboard shows every metric archfilter has.
	for name := range ours {
		if !used[name] {
			problems = append(problems, "no dashboard panel shows "+name)
		}
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestPrometheusRules runs promtool (Debian's prometheus package) on the
// rules: check rules, and the unit tests in testdata that fire each alert.
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: apt-get install prometheus (hack/install-test-deps.sh)")
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	readYAML(t, rulesTestFile, &tests)
	fired := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired[a.Alertname] = true
			}
		}
	}
	var rules ruleFile
	readYAML(t, rulesFile, &rules)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && !fired[r.Alert] {
				t.Errorf("%s: no test fires %s", rulesTestFile, r.Alert)
			}
		}
	}
	for _, args := range [][]string{
		{"check", "rules", repoPath(rulesFile)},
		{"test", "rules", repoPath(rulesTestFile)},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

//go:build !k8s1.35

package perf

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "k8s.io/component-base/logs/json/register"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"sigs.k8s.io/yaml"

	_ "github.com/archfilter/archfilter/apis/config/scheme"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// rounds repeats every workload, in turn: go test's -count would repeat each workload
// back to back, so the two sides of a ratio would run minutes apart on a machine
// whose load changes. Even rounds run the test cases in reverse order, so neither
// side of a pair always runs first. Results carry a "/round-N" element that
// hack/bench strips.
var rounds = flag.Int("rounds", 1, "how many times to run all selected workloads, one after the other")

// configDir holds the workloads, templates and scheduler configurations, with
// ${REGISTRY_*} placeholders for the registries' addresses and CA.
const configDir = "config"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The test apiserver leaves insecure_test_key* files in the temporary
	// directory on every start. Give this process a directory of its own and
	// remove it, rather than globbing a shared /tmp other tests write to.
	tmp, err := os.MkdirTemp("", "archfilter-perf")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	os.Setenv("TMPDIR", tmp)

	if err := perf.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// BenchmarkPerfScheduling runs every workload of config/performance-config.yaml that
// -perf-scheduling-label-filter selects (hack/bench/bench.sh sets it from
// BENCH_SCALE), in one invocation, with ArchFilter in the out-of-tree registry.
// Besides scheduler_perf's own metrics (SchedulingThroughput/…), each workload reports
// what the harness observed (see observer.report).
func BenchmarkPerfScheduling(b *testing.B) {
	regs := startRegistries(b)
	dir := renderConfigTo(b, b.TempDir(), map[string]string{
		"${REGISTRY_WARM}":   regs.warm.Host(),
		"${REGISTRY_COLD}":   regs.cold.Host(),
		"${REGISTRY_OUTAGE}": regs.outage.Host(),
		"${REGISTRY_CA}":     regs.writeCA(b, b.TempDir()),
		// Upstream's templates are read where the module graph has them.
		"${UPSTREAM_TEMPLATES}": upstreamTemplates(b),
	})
	workloads, err := loadWorkloads(filepath.Join(dir, "performance-config.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	obs := &observer{regs: regs, workloads: workloads}

	// Paths in the configuration are relative to it, as in scheduler_perf's own.
	b.Chdir(dir)
	// scheduler_perf names its data items file after the benchmark, "…/round-N_…":
	// the directory for the "BenchmarkPerfScheduling/" part must exist.
	itemsDir := "."
	if f := flag.Lookup("data-items-dir"); f != nil && f.Value.String() != "" {
		itemsDir = f.Value.String()
	}
	if err := os.MkdirAll(filepath.Join(itemsDir, b.Name()), 0o755); err != nil {
		b.Fatal(err)
	}
	reversed, err := writeReversed("performance-config.yaml", "performance-config-reversed.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for round := 1; round <= *rounds; round++ {
		config := "performance-config.yaml"
		if round%2 == 0 {
			config = reversed
		}
		b.Run(fmt.Sprintf("round-%d", round), func(b *testing.B) {
			perf.RunBenchmarkPerfScheduling(b, config, "archfilter",
				frameworkruntime.Registry{archfilter.Name: archfilter.New},
				perf.WithPrepareFn(obs.prepare))
		})
	}
}

// writeReversed writes the test cases of the configuration in reverse order (YAML
// anchors resolved) and returns the new file's name.
func writeReversed(from, to string) (string, error) {
	data, err := os.ReadFile(from)
	if err != nil {
		return "", err
	}
	var cases []any
	if err := yaml.Unmarshal(data, &cases); err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	slices.Reverse(cases)
	out, err := yaml.Marshal(cases)
	if err != nil {
		return "", err
	}
	return to, os.WriteFile(to, out, 0o644)
}

// renderConfigTo copies configDir to out, replacing placeholders, and returns out.
func renderConfigTo(tb testing.TB, out string, replace map[string]string) string {
	tb.Helper()
	err := filepath.WalkDir(configDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(configDir, path)
		if err != nil {
			return err
		}
		target := filepath.Join(out, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s := string(data)
		for from, to := range replace {
			s = strings.ReplaceAll(s, from, to)
		}
		if i := strings.Index(s, "${"); i >= 0 {
			name, _, _ := strings.Cut(s[i:], "}")
			return fmt.Errorf("%s: unknown placeholder %s}", path, name)
		}
		return os.WriteFile(target, []byte(s), 0o644)
	})
	if err != nil {
		tb.Fatalf("rendering %s: %v", configDir, err)
	}
	return out
}

// upstreamTemplates is the directory of scheduler_perf's own node and pod
// templates in the module cache, for the Upstream_* test cases.
func upstreamTemplates(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		tb.Fatalf("locating k8s.io/kubernetes in the module cache (go list -m): %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "test", "integration", "scheduler_perf", "templates")
	if _, err := os.Stat(filepath.Join(dir, "pod-default.yaml")); err != nil {
		tb.Fatalf("scheduler_perf's templates: %v", err)
	}
	return dir
}

// workload is what the observer needs to know about one workload of the
// configuration: how many pods it creates in total and in the measured
// namespace, which is the namespace of the createPods op that collects metrics,
// or measuredNamespace.
type workload struct {
	totalPods, measuredPods int
	measuredNamespace       string
}

// loadWorkloads reads the scheduler_perf configuration (the subset of its schema the
// observer needs) and returns the workloads by "TestCase/Workload".
func loadWorkloads(path string) (map[string]workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cases []struct {
		Name             string
		WorkloadTemplate []struct {
			Opcode         string
			Count          int
			CountParam     string
			Namespace      string
			CollectMetrics bool `json:"collectMetrics"`
		}
		Workloads []struct {
			Name   string
			Params map[string]int
		}
	}
	if err := yaml.Unmarshal(data, &cases); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]workload{}
	for _, tc := range cases {
		ns := measuredNamespace
		for _, op := range tc.WorkloadTemplate {
			if op.Opcode == "createPods" && op.CollectMetrics && op.Namespace != "" {
				ns = op.Namespace
			}
		}
		for _, w := range tc.Workloads {
			wl := workload{measuredNamespace: ns}
			for _, op := range tc.WorkloadTemplate {
				if op.Opcode != "createPods" {
					continue
				}
				n := op.Count
				if op.CountParam != "" {
					v, ok := w.Params[strings.TrimPrefix(op.CountParam, "$")]
					if !ok {
						return nil, fmt.Errorf("%s/%s: no parameter %s", tc.Name, w.Name, op.CountParam)
					}
					n = v
				}
				wl.totalPods += n
				if op.Namespace == ns {
					wl.measuredPods += n
				}
			}
			if wl.measuredPods == 0 {
				return nil, fmt.Errorf("%s/%s: no pods in namespace %q", tc.Name, w.Name, ns)
			}
			out[tc.Name+"/"+w.Name] = wl
		}
	}
	return out, nil
}

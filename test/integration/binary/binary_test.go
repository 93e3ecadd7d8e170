// Package binary tests the archfilter-scheduler binary as users run it: flags,
// version, configuration errors and logging, without a cluster.
package binary

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

const configDir = "../../../manifests/scheduler-config"

// binary returns the scheduler built by `make build`; `make test-integration`
// sets ARCHFILTER_SCHEDULER_BINARY so these tests run what ships.
func binary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("ARCHFILTER_SCHEDULER_BINARY")
	if path == "" {
		t.Skip("ARCHFILTER_SCHEDULER_BINARY is not set: run these tests with `make test-integration`")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("ARCHFILTER_SCHEDULER_BINARY: %v", err)
	}
	return path
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary(t), args...).CombinedOutput()
	return string(out), err
}

func TestVersion(t *testing.T) {
	out, err := run(t, "--version")
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	// The Kubernetes version comes from the flavour's module file through the
	// Makefile's ldflags; `make test-integration` says which one it built
	// (ARCHFILTER_KUBE_VERSION, from `go list -m k8s.io/kubernetes`). The
	// k8s1.35 flavour also says so in archfilter's own version.
	kube := os.Getenv("ARCHFILTER_KUBE_VERSION")
	if kube == "" {
		t.Skip("ARCHFILTER_KUBE_VERSION is not set: run these tests with `make test-integration`")
	}
	want := []string{`(?m)^archfilter \S+ \(commit \S+, built \S+, go\S+\)$`, `(?m)^Kubernetes ` + regexp.QuoteMeta(kube) + `$`}
	if strings.HasPrefix(kube, "v1.35.") {
		want = append(want, `(?m)^archfilter \S+-k8s1\.35 `)
	}
	for _, re := range want {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("--version output does not match %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "v0.0.0-master") {
		t.Errorf("--version reports an unstamped Kubernetes version:\n%s", out)
	}
}

func TestConfigHelpParses(t *testing.T) {
	for _, f := range []string{"secondary-scheduler.yaml", "default-scheduler.yaml"} {
		t.Run(f, func(t *testing.T) {
			out, err := run(t, "--config", filepath.Join(configDir, f), "--help")
			if err != nil {
				t.Fatalf("--config %s --help: %v\n%s", f, err, out)
			}
			if !strings.Contains(out, "--config") {
				t.Errorf("help output does not describe --config:\n%s", out)
			}
		})
	}
}

// writeConfig writes a scheduler config pointing at a kubeconfig for an address
// nothing listens on: enough for the scheduler to start and log.
func writeConfig(t *testing.T, args string) string {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: archfilter-scheduler
  plugins: {multiPoint: {enabled: [{name: ArchFilter}]}}
  pluginConfig:
  - name: ArchFilter
    args: %s
`, kubeconfig, args)), 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}

func TestInvalidArgsStopStartup(t *testing.T) {
	tests := []struct {
		name string
		args string
		want []string
	}{
		{
			name: "validation error names the field",
			args: "{workers: 0, failurePolicy: Maybe}",
			want: []string{"ArchFilter", "args.workers", "args.failurePolicy", "Maybe"},
		},
		{
			name: "unknown field is rejected strictly",
			args: "{maxWiat: 10s}",
			want: []string{"unknown field", "maxWiat", "ArchFilter"},
		},
		{
			name: "a setting that would do nothing",
			args: "{archTaintToleration: true}",
			want: []string{"args.archTaintToleration: true does nothing unless ArchAwareTaintToleration replaces TaintToleration"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, "--config", writeConfig(t, tc.args), "--secure-port=0")
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) {
				t.Fatalf("scheduler did not exit with an error (err=%v):\n%s", err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not mention %s:\n%s", w, out)
				}
			}
		})
	}
}

// TestUnsafeProfileStopsStartup: a profile enabling ArchFilter's PreFilter
// (which may skip its Filter) without its Reserve (which makes the skip safe)
// stops the scheduler at start, naming the profile and the extension point.
func TestUnsafeProfileStopsStartup(t *testing.T) {
	kubeconfig := filepath.Join(filepath.Dir(writeConfig(t, "{}")), "kubeconfig")
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: archfilter-scheduler
  plugins:
    preEnqueue: {enabled: [{name: ArchFilter}]}
    preFilter: {enabled: [{name: ArchFilter}]}
    filter: {enabled: [{name: ArchFilter}]}
`, kubeconfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "--config", config, "--secure-port=0")
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("scheduler did not exit with an error (err=%v):\n%s", err, out)
	}
	for _, w := range []string{"profiles[0] (schedulerName archfilter-scheduler)", "ArchFilter is enabled at PreFilter", "but not at Reserve", "plugins.reserve.enabled"} {
		if !strings.Contains(out, w) {
			t.Errorf("output does not mention %s:\n%s", w, out)
		}
	}
}

// TestJSONLogging starts the scheduler with --logging-format=json and checks
// that what it logs while trying to reach its API server is JSON.
func TestJSONLogging(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "--config", writeConfig(t, "{}"),
		"--secure-port=0", "--logging-format=json", "-v=2")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	scanner := bufio.NewScanner(stderr)
	lines := 0
	for scanner.Scan() && lines < 5 {
		var entry map[string]any
		if err := json.Unmarshal(scanner.Bytes(), &entry); err != nil {
			t.Fatalf("log line is not JSON: %q", scanner.Text())
		}
		if _, ok := entry["msg"]; !ok {
			t.Errorf("JSON log line has no msg: %q", scanner.Text())
		}
		lines++
	}
	if lines == 0 {
		t.Fatalf("scheduler logged nothing (scan error: %v)", scanner.Err())
	}
}

// TestKubeconfigFlagNextToConfig runs the README's first command: --config
// with a configuration that names no kubeconfig, and --kubeconfig. The
// scheduler must talk to the kubeconfig's server (here an address nothing
// listens on), where kube-scheduler would ignore the flag and look for an
// in-cluster configuration.
func TestKubeconfigFlagNextToConfig(t *testing.T) {
	dir := filepath.Dir(writeConfig(t, "{}"))
	config := filepath.Join(dir, "no-kubeconfig.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: archfilter-scheduler
  plugins: {multiPoint: {enabled: [{name: ArchFilter}]}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "--config", config, "--kubeconfig", filepath.Join(dir, "kubeconfig"),
		"--secure-port=0", "-v=2")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	scanner := bufio.NewScanner(stderr)
	var seen []string
	for scanner.Scan() {
		line := scanner.Text()
		if strings.Contains(line, "127.0.0.1:1") {
			return // the client built from --kubeconfig is in use
		}
		if strings.Contains(line, "in-cluster") {
			t.Fatalf("--kubeconfig was ignored: %s", line)
		}
		if seen = append(seen, line); len(seen) > 50 {
			seen = seen[1:]
		}
	}
	t.Fatalf("the scheduler never mentioned the kubeconfig's server 127.0.0.1:1 (scan: %v); its last lines:\n%s", scanner.Err(), strings.Join(seen, "\n"))
}

// TestRefusesAnOlderAPIServer starts the scheduler against an API server (an
// HTTP server that answers /version) one minor older than the scheduler's
// Kubernetes: it must stop at once, naming both versions and the flavour that
// serves that API server, instead of waiting for informers of APIs the server
// does not have.
func TestRefusesAnOlderAPIServer(t *testing.T) {
	kube := os.Getenv("ARCHFILTER_KUBE_VERSION")
	if kube == "" {
		t.Skip("ARCHFILTER_KUBE_VERSION is not set: run these tests with `make test-integration`")
	}
	var major, minor int
	if _, err := fmt.Sscanf(kube, "v%d.%d.", &major, &minor); err != nil {
		t.Fatalf("ARCHFILTER_KUBE_VERSION %q: %v", kube, err)
	}
	older := fmt.Sprintf("v%d.%d.3", major, minor-1)
	var versionAsked atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.Error(w, "only /version here", http.StatusNotFound)
			return
		}
		versionAsked.Store(true)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"major":"%d","minor":"%d","gitVersion":%q,"platform":"linux/amd64"}`, major, minor-1, older)
	}))
	defer srv.Close()
	config := writeConfig(t, "{}")
	kubeconfig := filepath.Join(filepath.Dir(config), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := run(t, "--config", config, "--secure-port=0")
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("the scheduler did not exit with an error against %s (err=%v):\n%s", older, err, out)
	}
	if !versionAsked.Load() {
		t.Errorf("the scheduler never asked the API server for its version")
	}
	want := []string{"Kubernetes " + strings.TrimPrefix(older, "v") + ", older than this scheduler",
		"Kubernetes " + strings.TrimPrefix(kube, "v"), "never newer"}
	if minor-1 == 36 || minor-1 == 35 {
		want = append(want, "use the k8s1.35 flavour (image tag <version>-k8s1.35")
	} else {
		want = append(want, "no archfilter flavour supports it")
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output does not say %q:\n%s", w, out)
		}
	}
	t.Logf("refused in %s:\n%s", time.Since(start).Round(time.Millisecond), out)
}

// TestBuiltWithGoModsToolchain: every binary make build wrote beside the
// scheduler (both flavours, the placement companion, the kubectl plugin) was
// built by the toolchain go.mod names, as Go's build information records it
// (what `go version -m` prints and scanners read).
func TestBuiltWithGoModsToolchain(t *testing.T) {
	dir := filepath.Dir(binary(t))
	data, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mod.Toolchain == nil {
		t.Fatal("go.mod has no toolchain line")
	}
	want := mod.Toolchain.Name
	var checked []string
	for _, name := range []string{"archfilter-scheduler", "archfilter-scheduler-k8s1.35", "archfilter-placement", "kubectl-archfilter"} {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: %v (make build writes it)", name, err)
			continue
		}
		info, err := buildinfo.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if info.GoVersion != want {
			t.Errorf("%s was built with %s, go.mod's toolchain is %s", path, info.GoVersion, want)
		}
		checked = append(checked, name+" "+info.GoVersion)
	}
	t.Logf("checked: %s", strings.Join(checked, ", "))
}

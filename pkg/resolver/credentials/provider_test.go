package credentials

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
)

var (
	pluginOnce sync.Once
	pluginDir  string
	pluginErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pluginDir != "" {
		os.RemoveAll(pluginDir)
	}
	os.Exit(code)
}

// pluginBinDir builds testdata/fakeprovider once and returns the bin dir
// holding it as "fake-provider".
func pluginBinDir(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			pluginErr = err
			return
		}
		if pluginDir, err = os.MkdirTemp("", "archfilter-credential-provider"); err != nil {
			pluginErr = err
			return
		}
		cmd := exec.Command(goBin, "build", "-o", filepath.Join(pluginDir, "fake-provider"), "./testdata/fakeprovider")
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if pluginErr != nil {
		t.Fatalf("building the test plugin: %v", pluginErr)
	}
	return pluginDir
}

// providerConfig writes a CredentialProviderConfig for the fake plugin with
// the given environment and returns its path and the plugin's run log.
func providerConfig(t *testing.T, env map[string]string, extra string) (configPath, runLog string) {
	t.Helper()
	runLog = filepath.Join(t.TempDir(), "runs.log")
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: fake-provider
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  matchImages: ["*.registry.test", "*.registry.test:5000"]
  defaultCacheDuration: 1h
  args: ["--flag"]
%s  env:
  - name: FAKE_PROVIDER_LOG
    value: %s
`, extra, runLog)
	for k, v := range env {
		fmt.Fprintf(&b, "  - name: %s\n    value: %q\n", k, v)
	}
	return writeFile(t, "credential-provider.yaml", b.String()), runLog
}

func runs(t *testing.T, runLog string) []string {
	t.Helper()
	b, err := os.ReadFile(runLog)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestCredentialProvider(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cfg, runLog := providerConfig(t, nil, "")
	s, _ := startStore(t, Options{CredentialProviderConfig: cfg, CredentialProviderBinDir: pluginBinDir(t)},
		pullSecret("default", "regcred", map[string]string{"a.registry.test": "secret-user:p"}),
		serviceAccount("default", "default"))
	pc := s.ForPod(podWith("", "regcred")).(*PodCredentials)

	got := pc.ForContext(ctx, "a.registry.test")
	want := []string{"pod imagePullSecret default/regcred → secret-user", "credential provider fake-provider → plugin-user"}
	if diff := cmp.Diff(want, summary(got)); diff != "" {
		t.Fatalf("ForContext (-want,+got):\n%s\nproblems: %v", diff, pc.Problems())
	}
	if got[1].Password != "plugin-pass-1" || len(got[1].ID) != 64 {
		t.Errorf("plugin credential = %+v", got[1])
	}
	if diff := cmp.Diff([]string{"a.registry.test --flag"}, runs(t, runLog)); diff != "" {
		t.Errorf("plugin runs (-want,+got):\n%s", diff)
	}

	// Cached per registry (the plugin answered cacheKeyType Registry).
	pc.ForContext(ctx, "a.registry.test")
	pc.ForContext(ctx, "a.registry.test/team/app")
	if n := len(runs(t, runLog)); n != 1 {
		t.Errorf("plugin ran %d times, want 1", n)
	}
	// Images the plugin does not match never run it.
	if got := pc.ForContext(ctx, "quay.io"); len(got) != 0 {
		t.Errorf("got %v for an unmatched registry", summary(got))
	}
	if got := pc.ForContext(ctx, "a.registry.test:5001"); len(got) != 0 {
		t.Errorf("got %v for an unmatched port", summary(got))
	}
	if n := len(runs(t, runLog)); n != 1 {
		t.Errorf("plugin ran %d times, want 1", n)
	}

	// For never waits for the plugin: it starts it and answers from the
	// cache once the plugin is done.
	if got := summary(pc.For("b.registry.test")); got != nil {
		t.Errorf("For answered %v before the plugin ran", got)
	}
	poll(t, "the background plugin run", func() bool {
		got := pc.For("b.registry.test")
		return len(got) == 1 && got[0].Username == "plugin-user"
	})
	if n := len(runs(t, runLog)); n != 2 {
		t.Errorf("plugin ran %d times, want 2", n)
	}
	if p := pc.Problems(); len(p) != 0 {
		t.Errorf("Problems() = %v", p)
	}
}

func TestCredentialProviderCaching(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		targets  []string // looked up in order, then again after step
		step     time.Duration
		wantRuns int
	}{
		{name: "image key", env: map[string]string{"FAKE_PROVIDER_CACHE_KEY": "Image"}, targets: []string{"a.registry.test/x", "a.registry.test/y", "a.registry.test/x"}, wantRuns: 2},
		{name: "registry key", env: map[string]string{"FAKE_PROVIDER_CACHE_KEY": "Registry"}, targets: []string{"a.registry.test/x", "a.registry.test/y", "b.registry.test"}, wantRuns: 2},
		{name: "global key", env: map[string]string{"FAKE_PROVIDER_CACHE_KEY": "Global", "FAKE_PROVIDER_AUTH_KEY": "*.registry.test"}, targets: []string{"a.registry.test", "b.registry.test"}, wantRuns: 1},
		{name: "zero duration is not cached", env: map[string]string{"FAKE_PROVIDER_CACHE_DURATION": "0s"}, targets: []string{"a.registry.test", "a.registry.test"}, wantRuns: 2},
		{name: "response duration wins over the default", env: map[string]string{"FAKE_PROVIDER_CACHE_DURATION": "1m"}, targets: []string{"a.registry.test"}, step: time.Minute, wantRuns: 2},
		{name: "default duration", targets: []string{"a.registry.test"}, step: 59 * time.Minute, wantRuns: 1},
		{name: "default duration expires", targets: []string{"a.registry.test"}, step: time.Hour, wantRuns: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			cfg, runLog := providerConfig(t, tc.env, "")
			clk := newFakeClock()
			s, _ := startStore(t, Options{CredentialProviderConfig: cfg, CredentialProviderBinDir: pluginBinDir(t), Clock: clk}, serviceAccount("default", "default"))
			pc := s.ForPod(podWith("")).(*PodCredentials)
			lookup := func() {
				for _, target := range tc.targets {
					if got := pc.ForContext(ctx, target); len(got) != 1 {
						t.Fatalf("ForContext(%q) = %v, problems %v", target, summary(got), pc.Problems())
					}
				}
			}
			lookup()
			if tc.step > 0 {
				clk.Step(tc.step)
				lookup()
			}
			if got := len(runs(t, runLog)); got != tc.wantRuns {
				t.Errorf("plugin ran %d times, want %d: %v", got, tc.wantRuns, runs(t, runLog))
			}
		})
	}
}

func TestCredentialProviderFailures(t *testing.T) {
	tests := []struct {
		mode    string
		timeout time.Duration
		want    string
	}{
		{mode: "fail", want: "credential provider fake-provider: exit status 1"},
		{mode: "garbage", want: "credential provider fake-provider: response is not a CredentialProviderResponse"},
		{mode: "wrong-version", want: `credential provider fake-provider: response is "credentialprovider.kubelet.k8s.io/v1alpha1" "CredentialProviderResponse", want credentialprovider.kubelet.k8s.io/v1 CredentialProviderResponse`},
		{mode: "sleep", timeout: 300 * time.Millisecond, want: "credential provider fake-provider: no answer within 300ms"},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			cfg, runLog := providerConfig(t, map[string]string{"FAKE_PROVIDER_MODE": tc.mode}, "")
			s, _ := startStore(t, Options{CredentialProviderConfig: cfg, CredentialProviderBinDir: pluginBinDir(t), ProviderTimeout: tc.timeout}, serviceAccount("default", "default"))
			pc := s.ForPod(podWith("")).(*PodCredentials)
			if got := pc.ForContext(ctx, "a.registry.test"); len(got) != 0 {
				t.Errorf("got %v", summary(got))
			}
			if diff := cmp.Diff([]string{tc.want}, pc.Problems()); diff != "" {
				t.Errorf("Problems() (-want,+got):\n%s", diff)
			}
			// A failure is remembered briefly rather than re-run on every lookup.
			pc.ForContext(ctx, "a.registry.test")
			pc.For("a.registry.test")
			if n := len(runs(t, runLog)); n != 1 {
				t.Errorf("plugin ran %d times, want 1", n)
			}
		})
	}
}

// The caller's context bounds the wait, not the plugin run others share.
func TestCredentialProviderCallerContext(t *testing.T) {
	cfg, _ := providerConfig(t, map[string]string{"FAKE_PROVIDER_MODE": "sleep"}, "")
	s, _ := startStore(t, Options{CredentialProviderConfig: cfg, CredentialProviderBinDir: pluginBinDir(t), ProviderTimeout: 5 * time.Second}, serviceAccount("default", "default"))
	pc := s.ForPod(podWith("")).(*PodCredentials)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	pc.ForContext(ctx, "a.registry.test")
	if p := pc.Problems(); len(p) != 1 || !strings.Contains(p[0], "context deadline exceeded") {
		t.Errorf("Problems() = %v", p)
	}
}

func TestCredentialProviderServiceAccountTokensUnsupported(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cfg, runLog := providerConfig(t, nil, `  tokenAttributes:
    serviceAccountTokenAudience: registry
    cacheType: ServiceAccount
    requireServiceAccount: true
`)
	s, _ := startStore(t, Options{CredentialProviderConfig: cfg, CredentialProviderBinDir: pluginBinDir(t)}, serviceAccount("default", "default"))
	pc := s.ForPod(podWith("")).(*PodCredentials)
	if got := pc.ForContext(ctx, "a.registry.test"); len(got) != 0 {
		t.Errorf("got %v", summary(got))
	}
	if p := pc.Problems(); len(p) != 1 || !strings.Contains(p[0], "needs service account tokens") {
		t.Errorf("Problems() = %v", p)
	}
	if r := runs(t, runLog); r != nil {
		t.Errorf("plugin ran: %v", r)
	}
}

func TestLoadProvidersErrors(t *testing.T) {
	bin := pluginBinDir(t)
	provider := func(fields string) string {
		return "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- " + fields
	}
	const ok = "name: fake-provider\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  matchImages: [\"*.registry.test\"]\n  defaultCacheDuration: 1m\n"
	tests := []struct {
		name   string
		config string
		want   string
	}{
		{name: "wrong kind", config: "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n", want: "want kind CredentialProviderConfig"},
		{name: "unknown field", config: provider(ok + "  matchImage: [x]\n"), want: "unknown field"},
		{name: "missing binary", config: provider(strings.Replace(ok, "fake-provider", "no-such-plugin", 1)), want: "providers[0]: plugin binary"},
		{name: "name with a path", config: provider(strings.Replace(ok, "fake-provider", "../fake-provider", 1)), want: "providers[0].name"},
		{name: "no matchImages", config: provider(strings.Replace(ok, `["*.registry.test"]`, "[]", 1)), want: "providers[0].matchImages"},
		{name: "malformed matchImages", config: provider(strings.Replace(ok, `"*.registry.test"`, `"[.registry.test"`, 1)), want: "providers[0].matchImages[0]"},
		{name: "no defaultCacheDuration", config: provider(strings.Replace(ok, "  defaultCacheDuration: 1m\n", "", 1)), want: "providers[0].defaultCacheDuration"},
		{name: "unknown protocol version", config: provider(strings.Replace(ok, "credentialprovider.kubelet.k8s.io/v1", "v9", 1)), want: "providers[0].apiVersion"},
		{name: "duplicate name", config: provider(ok + "- " + ok), want: "providers[1].name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "config.yaml", tc.config)
			_, err := newStoreWith(t, Options{CredentialProviderConfig: path, CredentialProviderBinDir: bin})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "credentialProviderConfig") {
				t.Errorf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}

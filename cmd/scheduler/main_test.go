package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/internal/schedulercmd"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

const manifestDir = "../../manifests/scheduler-config"

// fakeKubeconfig points at a server that answers every request with an empty
// object: Setup builds clients and informers but never needs real answers.
func fakeKubeconfig(t *testing.T) string {
	t.Helper()
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(server.Close)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, insecure-skip-tls-verify: true}}]
contexts: [{name: test, context: {cluster: test, user: test}}]
current-context: test
users: [{name: test, user: {}}]
`, server.URL)
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// withKubeconfig copies a manifest, pointing clientConnection at kubeconfig:
// kube-scheduler ignores --kubeconfig when --config is given.
func withKubeconfig(t *testing.T, manifest, kubeconfig string) string {
	t.Helper()
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(manifest))
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func setup(t *testing.T, configFile string) (map[string]*config.Plugins, error) {
	t.Helper()
	opts := options.NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--config", configFile}); err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.SecureServing.Listener = listener
	t.Cleanup(func() { _ = listener.Close() })

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, sched, err := app.Setup(ctx, opts, Options()...)
	if err != nil {
		return nil, err
	}
	got := map[string]*config.Plugins{}
	for name, fwk := range sched.Profiles {
		got[name] = fwk.ListPlugins()
	}
	return got, nil
}

// withArchFilter is the given upstream profile with ArchFilter enabled as the
// manifests enable it: through multiPoint, so every default plugin stays and
// ArchFilter runs at each extension point it implements after the defaults,
// and under preEnqueue and filter, which makes it the first PreEnqueue plugin
// (it asks for a pod's images while SchedulingGates or GangScheduling still
// turn the pod away) and the first Filter plugin. The defaults come
// from the kube-scheduler this flavour is built with, so the test holds for
// every Kubernetes minor while pinning where ArchFilter goes.
func withArchFilter(defaults *config.Plugins) *config.Plugins {
	p := defaults.DeepCopy()
	last := func(ps *config.PluginSet, weight int32) {
		ps.Enabled = append(ps.Enabled, config.Plugin{Name: archfilter.Name, Weight: weight})
	}
	last(&p.PreFilter, 0)
	last(&p.PreScore, 0)
	last(&p.Score, 1)
	// Reserve checks the chosen node when PreFilter skipped Filter.
	last(&p.Reserve, 0)
	p.PreEnqueue.Enabled = append([]config.Plugin{{Name: archfilter.Name}}, p.PreEnqueue.Enabled...)
	p.Filter.Enabled = append([]config.Plugin{{Name: archfilter.Name}}, p.Filter.Enabled...)
	return p
}

// upstreamDefaults is the plugin set of a profile that configures no plugins.
func upstreamDefaults(t *testing.T, kubeconfig string) *config.Plugins {
	t.Helper()
	got, err := setup(t, writeConfig(t, kubeconfig, "[{schedulerName: defaults}]"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got["defaults"].Filter.Enabled) == 0 {
		t.Fatalf("the default profile has no Filter plugins: %+v", got["defaults"])
	}
	return got["defaults"]
}

func TestSetupWithManifests(t *testing.T) {
	kubeconfig := fakeKubeconfig(t)
	want := withArchFilter(upstreamDefaults(t, kubeconfig))
	tests := []struct {
		manifest string
		want     map[string]*config.Plugins
	}{
		{
			manifest: "secondary-scheduler.yaml",
			want:     map[string]*config.Plugins{"archfilter-scheduler": want},
		},
		{
			manifest: "default-scheduler.yaml",
			want:     map[string]*config.Plugins{"default-scheduler": want},
		},
	}
	for _, tc := range tests {
		t.Run(tc.manifest, func(t *testing.T) {
			got, err := setup(t, withKubeconfig(t, filepath.Join(manifestDir, tc.manifest), kubeconfig))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plugins per profile (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestSetupRejects checks that a bad configuration stops the scheduler at
// start-up with an error that says what to change, not at the first pod.
func TestSetupRejects(t *testing.T) {
	kubeconfig := fakeKubeconfig(t)
	tests := []struct {
		name     string
		profiles string
		want     []string
	}{
		{
			name: "invalid ArchFilter args name their paths",
			profiles: `
- schedulerName: archfilter-scheduler
  plugins: {multiPoint: {enabled: [{name: ArchFilter}]}}
  pluginConfig:
  - name: ArchFilter
    args: {maxWait: 0s, preferredPlatforms: [{platform: arm64, weight: 10}]}`,
			want: []string{`"ArchFilter"`, "args.maxWait", "args.preferredPlatforms[0].platform"},
		},
		{
			// Only the k8s1.35 flavour carries sigs.k8s.io/scheduler-plugins.
			name: "a scheduler-plugins plugin names the flavour that has it",
			profiles: `
- schedulerName: gang
  plugins: {multiPoint: {enabled: [{name: Coscheduling}, {name: ArchFilter}]}}`,
			want: []string{`"Coscheduling"`, "scheduler-plugins", schedulercmd.SchedulerPlugins.Flavour},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := setup(t, writeConfig(t, kubeconfig, tc.profiles))
			if err == nil {
				t.Fatal("Setup succeeded")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %s", err, want)
				}
			}
		})
	}
}

// writeConfig writes a KubeSchedulerConfiguration with the given profiles
// (a YAML list) and returns its path.
func writeConfig(t *testing.T, kubeconfig, profiles string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q}
profiles: %s
`, kubeconfig, profiles)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

package schedulercmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const profile = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: archfilter-scheduler
`

// --kubeconfig next to --config reaches the scheduler: the command runs with a
// copy of the configuration naming it, as the README's first command expects.
func TestKubeconfigFlagWithConfig(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := writeFile(t, dir, "kubeconfig", "apiVersion: v1\nkind: Config\n")
	for _, tc := range []struct {
		name       string
		config     string
		args       func(config string) []string
		wantConfig func(config string) string // "" : a copy naming kubeconfig
		wantErr    string
	}{
		{
			name:   "config without a kubeconfig: the flag fills it in",
			config: profile,
			args:   func(c string) []string { return []string{"--config", c, "--kubeconfig", kubeconfig} },
		},
		{
			name:       "config naming the same kubeconfig: used as it is",
			config:     profile + "clientConnection:\n  kubeconfig: " + kubeconfig + "\n",
			args:       func(c string) []string { return []string{"--config", c, "--kubeconfig", kubeconfig} },
			wantConfig: func(c string) string { return c },
		},
		{
			name:    "config naming another kubeconfig: refused",
			config:  profile + "clientConnection:\n  kubeconfig: /etc/other\n",
			args:    func(c string) []string { return []string{"--config", c, "--kubeconfig", kubeconfig} },
			wantErr: "conflicts with clientConnection.kubeconfig /etc/other",
		},
		{
			name:       "no --kubeconfig: nothing changes",
			config:     profile,
			args:       func(c string) []string { return []string{"--config", c} },
			wantConfig: func(c string) string { return c },
		},
		{
			name: "unreadable config",
			args: func(string) []string {
				return []string{"--config", filepath.Join(dir, "missing.yaml"), "--kubeconfig", kubeconfig}
			},
			wantErr: "--config: open",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := ""
			if tc.config != "" {
				config = writeFile(t, t.TempDir(), "config.yaml", tc.config)
			}
			cmd := New()
			if err := cmd.ParseFlags(tc.args(config)); err != nil {
				t.Fatal(err)
			}
			err := honourKubeconfigFlag(cmd)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := cmd.Flags().Lookup("config").Value.String()
			if tc.wantConfig != nil {
				if got != tc.wantConfig(config) {
					t.Errorf("--config is %s, want %s", got, tc.wantConfig(config))
				}
				return
			}
			t.Cleanup(func() { os.Remove(got) })
			var merged map[string]any
			data, err := os.ReadFile(got)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(data, &merged); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{
				"apiVersion":       "kubescheduler.config.k8s.io/v1",
				"kind":             "KubeSchedulerConfiguration",
				"profiles":         []any{map[string]any{"schedulerName": "archfilter-scheduler"}},
				"clientConnection": map[string]any{"kubeconfig": kubeconfig},
			}
			if diff := cmp.Diff(want, merged); diff != "" {
				t.Errorf("merged configuration (-want,+got):\n%s", diff)
			}
		})
	}
}

package schedulercmd

import (
	"io"
	"strings"
	"testing"
)

// pre-uninstall is reachable from the scheduler's command with flags of its
// own, and none of kube-scheduler's start-up runs before it.
func TestPreUninstallCommand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		// wantOut and notOut: in and not in what it prints.
		wantOut, notOut []string
	}{
		{
			name:    "help: its own flags only",
			args:    []string{"pre-uninstall", "--help"},
			wantOut: []string{"helm uninstall runs", "--scheduler-name", "--lease-shared", "--how-to-force"},
			notOut:  []string{"--leader-elect", "--config"},
		},
		{
			name:    "a Lease is NAMESPACE/NAME",
			args:    []string{"pre-uninstall", "--scheduler-name", "archfilter-scheduler", "--lease", "archfilter-scheduler"},
			wantErr: `--lease "archfilter-scheduler": want NAMESPACE/NAME`,
		},
		{
			name:    "kube-scheduler's flags are not its own",
			args:    []string{"pre-uninstall", "--config", "x.yaml"},
			wantErr: "unknown flag: --config",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := New(ArchFilterPlugins()...)
			var out strings.Builder
			cmd.SetArgs(tc.args)
			cmd.SetOut(&out)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.notOut {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q:\n%s", w, out.String())
				}
			}
		})
	}
}

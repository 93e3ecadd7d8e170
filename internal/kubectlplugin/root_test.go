package kubectlplugin

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// flagLines returns the flags a help text lists: the first word starting with "--" of
// each line that starts with "-", in order.
func flagLines(help string) []string {
	var out []string
	for _, line := range strings.Split(help, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "-") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "--") {
				out = append(out, strings.TrimSuffix(f, ","))
				break
			}
		}
	}
	return out
}

// TestHelpShowsOwnFlags: each command's --help lists its own flags and none of the
// flags every command takes; those are listed once, by "options", to which every
// help points.
func TestHelpShowsOwnFlags(t *testing.T) {
	root := NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	global := map[string]bool{}
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { global["--"+f.Name] = true })
	for _, name := range []string{"--kubeconfig", "--context", "--namespace", "--v", "--as", "--request-timeout"} {
		if !global[name] {
			t.Errorf("%s is not a global flag", name)
		}
	}

	for _, sub := range []string{"inspect", "check", "why", "report"} {
		t.Run(sub, func(t *testing.T) {
			stdout, stderr, code := run(t, "", sub, "--help")
			if code != 0 || stderr != "" {
				t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
			}
			cmd, _, err := root.Find([]string{sub})
			if err != nil {
				t.Fatal(err)
			}
			listed := flagLines(stdout)
			for _, f := range listed {
				if global[f] {
					t.Errorf("%s --help lists the global flag %s", sub, f)
				}
			}
			cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && !strings.Contains(stdout, "--"+f.Name) {
					t.Errorf("%s --help does not list its flag --%s", sub, f.Name)
				}
			})
			if len(listed) < 3 {
				t.Errorf("%s --help lists %d flags: %q", sub, len(listed), listed)
			}
			hint := strings.Index(stdout, `Use "kubectl archfilter options" for a list of global command-line options`)
			flags := strings.Index(stdout, "\nFlags:\n")
			if hint < 0 || flags < 0 || flags > hint || strings.Count(stdout, "kubectl archfilter options") != 1 {
				t.Errorf("%s --help: want its Flags, then one line pointing to the options command:\n%s", sub, stdout)
			}
		})
	}

	t.Run("options", func(t *testing.T) {
		stdout, stderr, code := run(t, "", "options")
		if code != 0 || stderr != "" {
			t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
		}
		count := map[string]int{}
		for _, f := range flagLines(stdout) {
			count[f]++
		}
		for name := range global {
			if count[name] != 1 {
				t.Errorf("options lists %s %d times, want once:\n%s", name, count[name], stdout)
			}
		}
		if len(count) != len(global) {
			t.Errorf("options lists %d flags, want the %d global ones", len(count), len(global))
		}
	})

	t.Run("root", func(t *testing.T) {
		stdout, _, code := run(t, "", "--help")
		if code != 0 {
			t.Fatalf("exit status %d", code)
		}
		for _, f := range flagLines(stdout) {
			if global[f] {
				t.Errorf("the root's help lists the global flag %s", f)
			}
		}
		for _, want := range []string{"inspect", "check", "why", "report", "options", `Use "kubectl archfilter [command] --help"`, `Use "kubectl archfilter options"`} {
			if !strings.Contains(stdout, want) {
				t.Errorf("the root's help does not say %q:\n%s", want, stdout)
			}
		}
	})
}

// captureStderr runs fn with os.Stderr a pipe, and returns what was written to it.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stderr = saved }()
	fn()
	_ = w.Close()
	return <-done
}

// TestLogsOnlyWithV: klog's lines (client-go logs its throttling waits at level 0 once
// they pass a second) reach stderr only with -v, up to its level.
func TestLogsOnlyWithV(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		want, hide []string
	}{
		{name: "no -v", hide: []string{"throttling", "detail", "deep"}},
		{name: "-v 0", args: []string{"-v", "0"}, want: []string{"throttling"}, hide: []string{"detail", "deep"}},
		{name: "-v 2", args: []string{"-v", "2"}, want: []string{"throttling", "detail"}, hide: []string{"deep"}},
		{name: "--v=4 after the command", args: []string{"--v=4"}, want: []string{"throttling", "detail", "deep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			root.AddCommand(&cobra.Command{Use: "log", RunE: func(cmd *cobra.Command, _ []string) error {
				klog.Info("Waited for 1.2s due to client-side throttling, not priority and fairness")
				klog.V(2).Info("detail")
				klog.FromContext(cmd.Context()).V(4).Info("deep")
				return nil
			}})
			root.SetArgs(append([]string{"log"}, tc.args...))
			leaked := captureStderr(t, func() {
				if err := root.ExecuteContext(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
			if leaked != "" {
				t.Errorf("written to the process's stderr: %q", leaked)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr does not carry %q:\n%s", w, errOut.String())
				}
			}
			for _, n := range tc.hide {
				if strings.Contains(errOut.String(), n) {
					t.Errorf("stderr carries %q:\n%s", n, errOut.String())
				}
			}
			if out.Len() != 0 {
				t.Errorf("stdout: %q", out.String())
			}
		})
	}
}

// TestQuietRun: a command that answers prints its answer and nothing on stderr.
func TestQuietRun(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	var stdout, stderr string
	var code int
	leaked := captureStderr(t, func() {
		stdout, stderr, code = run(t, "", "inspect", "--insecure-registry", fx.host, fx.multiRef)
	})
	if code != 0 || stderr != "" || leaked != "" {
		t.Errorf("exit status %d, stderr %q, written to the process's stderr %q; want 0 and nothing", code, stderr, leaked)
	}
	if !hasRow(stdout, fx.multiRef, "image", "linux/arm64") {
		t.Errorf("stdout:\n%s", stdout)
	}
}

package faults

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

// controlPlane restarts the KWOK cluster's components, which kwokctl's binary
// runtime runs as plain processes: their pids are in the cluster's pids/
// directory, and `kwokctl start cluster` starts again whichever is not running,
// with the arguments it was created with.
type controlPlane struct {
	dir     string // $KWOK_WORKDIR/clusters/$CLUSTER_NAME
	name    string
	kwokctl string
	workdir string
}

// kwokControlPlane finds the suite's cluster, or says why it cannot restart it.
func kwokControlPlane(t *testing.T) (*controlPlane, string) {
	t.Helper()
	if env.Provider != "kwok" {
		return nil, "the control plane of a " + env.Provider + " cluster is not a set of local processes"
	}
	root := framework.RepoRoot()
	cache := os.Getenv("ARCHFILTER_CACHE")
	if cache == "" {
		cache = filepath.Join(root, ".cache")
	}
	workdir := os.Getenv("KWOK_WORKDIR")
	if workdir == "" {
		workdir = filepath.Join(cache, "kwok")
	}
	name := os.Getenv("CLUSTER_NAME")
	out, err := exec.Command(filepath.Join(root, "hack", "cluster", "tools.sh"), "--print", "kwok").Output()
	if err != nil {
		return nil, fmt.Sprintf("hack/cluster/tools.sh --print kwok: %v", err)
	}
	kwokctl := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "KWOKCTL_BIN="); ok {
			kwokctl = v
		}
	}
	if kwokctl == "" {
		return nil, "hack/cluster/tools.sh --print kwok named no kwokctl"
	}
	cp := &controlPlane{dir: filepath.Join(workdir, "clusters", name), name: name, kwokctl: kwokctl, workdir: workdir}
	if _, err := cp.pid("kube-apiserver"); err != nil {
		return nil, err.Error()
	}
	return cp, ""
}

func (cp *controlPlane) pid(component string) (int, error) {
	b, err := os.ReadFile(filepath.Join(cp.dir, "pids", component+".pid"))
	if err != nil {
		return 0, fmt.Errorf("pid of %s: %w", component, err)
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// stop ends component with sig and waits until its process is gone.
func (cp *controlPlane) stop(ctx context.Context, component string, sig syscall.Signal) error {
	pid, err := cp.pid(component)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signalling %s (pid %d): %w", component, pid, err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return syscall.Kill(pid, 0) != nil, nil
	})
}

// start has kwokctl start what is not running, and waits for the apiserver.
func (cp *controlPlane) start(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, cp.kwokctl, "--name", cp.name, "start", "cluster")
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+cp.workdir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kwokctl start cluster: %w\n%s", err, out)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.Discovery().ServerVersion()
		return err == nil, nil
	})
}

// restart stops component with sig, keeps it down for down, and starts it.
// kube-apiserver's graceful termination waits up to a minute for its watches;
// the suite kills it (a crash, an OOM) to keep to its time.
func (cp *controlPlane) restart(ctx context.Context, component string, sig syscall.Signal, down time.Duration) error {
	if err := cp.stop(ctx, component, sig); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	return cp.start(ctx)
}

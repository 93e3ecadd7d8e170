//go:build !k8s1.35

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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	for _, c := range []string{"kube-apiserver", "etcd"} {
		if len(cp.processes(c)) == 0 {
			return nil, fmt.Sprintf("no %s process of cluster %s found (kwokctl's binary runtime, in %s)", c, name, cp.dir)
		}
	}
	return cp, ""
}

// stop ends component with sig and waits until no process of it is left.
// The pid file may name a process that forked the component (kwokctl's
// binary runtime forks), so the component's processes are found by their
// command line: its binary, run with an argument in the cluster's directory.
func (cp *controlPlane) stop(ctx context.Context, component string, sig syscall.Signal) error {
	pids := cp.processes(component)
	if len(pids) == 0 {
		return fmt.Errorf("no %s process of cluster %s is running", component, cp.name)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("signalling %s (pid %d): %w", component, pid, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return len(cp.processes(component)) == 0, nil
	})
}

// processes are the pids of the running processes of component in this
// cluster (zombies excluded: nothing may reap a killed daemon here).
func (cp *controlPlane) processes(component string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if filepath.Base(args[0]) != component || !strings.Contains(string(cmdline), cp.dir) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(fields) > 0 && fields[0] == "Z" {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// start has kwokctl start what is not running, and waits for the apiserver.
func (cp *controlPlane) start(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, cp.kwokctl, "--name", cp.name, "start", "cluster")
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+cp.workdir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kwokctl start cluster: %w\n%s", err, out)
	}
	// Served from etcd, not just the apiserver's /version: both must be back.
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1})
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

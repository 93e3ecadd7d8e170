package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Env is a cluster the suite runs against, however it was brought up.
type Env struct {
	Provider   string
	Kubeconfig string
	Client     kubernetes.Interface
	// Public is an anonymous registry, Private one that needs credentials.
	Public, Private Registry
	Nodes           []NodeSpec
	// Schedulers starts archfilter-scheduler replicas as secondary schedulers.
	Schedulers Launcher
	// Registries stops and starts both registries, keeping their content
	// (nil when the provider cannot).
	Registries RegistryControl
	// DefaultSchedulerIsArchFilter is true when the cluster's default-scheduler
	// is archfilter (replacement profile), so default pods are filtered too.
	DefaultSchedulerIsArchFilter bool
}

// Provider brings a cluster up for the suite and takes it down again.
type Provider interface {
	Name() string
	Up(ctx context.Context) (*Env, error)
	Down(ctx context.Context) error
}

// Launcher runs archfilter-scheduler replicas as a secondary scheduler.
type Launcher interface {
	Launch(ctx context.Context, o LaunchOptions) (Group, error)
}

// LaunchOptions describes a group of scheduler replicas.
type LaunchOptions struct {
	// Name is the profile's schedulerName and the lease's name, unique per
	// test so tests do not see each other's pods (process launchers only).
	Name     string
	Replicas int
	// FastLeaderElection shortens the lease (4s/3s/1s instead of 15s/10s/2s).
	FastLeaderElection bool
	// LogDir keeps the replicas' logs (process launchers only).
	LogDir string
	// ArchFilterArgs are merged over the manifests' ArchFilter args
	// (process launchers only), e.g. {"failurePolicy": "Fail"}.
	ArchFilterArgs map[string]any
	// Plugins, when set, replaces the profile's plugins (process launchers
	// only), e.g. to enable a scheduler-plugins plugin beside ArchFilter.
	Plugins map[string]any
	// ExtraArgs are added to the scheduler's command line (process launchers
	// only), e.g. feature gates.
	ExtraArgs []string
}

// Group is a set of replicas of one scheduler sharing a lease.
type Group interface {
	SchedulerName() string
	// Leader waits until one replica leads and returns its id.
	Leader(ctx context.Context, timeout time.Duration) (string, error)
	// Crash kills replica id at once, without releasing its lease.
	Crash(ctx context.Context, id string) error
	// Restart stops every replica and starts fresh ones (cold caches).
	Restart(ctx context.Context) error
	// Stop ends every replica.
	Stop(ctx context.Context)
	// Logs returns the tails of the replicas' logs, for failure messages.
	Logs() string
}

// RegistryControl stops and restarts the registries.
type RegistryControl interface {
	Stop(ctx context.Context) error
	Start(ctx context.Context) error
}

// scriptRegistries drives hack/cluster/registry.sh.
type scriptRegistries struct {
	root string
	env  []string
}

func (r scriptRegistries) Stop(ctx context.Context) error {
	_, err := run(ctx, r.root, r.env, "hack/cluster/registry.sh", "stop")
	return err
}

func (r scriptRegistries) Start(ctx context.Context) error {
	_, err := run(ctx, r.root, r.env, "hack/cluster/registry.sh", "up")
	return err
}

// RepoRoot finds the repository root from this source file.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// ProviderFromEnv picks the provider from E2E_PROVIDER (kwok, kind, existing);
// E2E_KUBECONFIG alone means "existing". It returns nil and a reason to skip
// when neither is set.
func ProviderFromEnv() (Provider, string) {
	name := os.Getenv("E2E_PROVIDER")
	if name == "" && os.Getenv("E2E_KUBECONFIG") != "" {
		name = "existing"
	}
	switch name {
	case "":
		return nil, "e2e tests need a cluster: run `make e2e` (KWOK, local), `make e2e-kind` (Docker host), " +
			"or set E2E_PROVIDER=kwok|kind, or E2E_KUBECONFIG=<kubeconfig of a running KWOK cluster>"
	case "kwok":
		return &KWOK{Root: RepoRoot()}, ""
	case "kind":
		return &Kind{Root: RepoRoot()}, ""
	case "existing":
		return &Existing{Root: RepoRoot(), Kubeconfig: os.Getenv("E2E_KUBECONFIG")}, ""
	default:
		return nil, "unknown E2E_PROVIDER " + name + " (want kwok, kind or existing)"
	}
}

func newClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	return kubernetes.NewForConfig(cfg)
}

// run runs a command in the repository root; its stderr goes to ours (the
// scripts' progress), its stdout is returned.
func run(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return out.String(), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// schedulerBinary is what the process launchers run.
func schedulerBinary(root string) string {
	if b := os.Getenv("ARCHFILTER_SCHEDULER_BINARY"); b != "" {
		return b
	}
	return filepath.Join(root, "bin", "archfilter-scheduler")
}

// localRegistries starts (or reuses) hack/cluster/registry.sh's registries.
func localRegistries(ctx context.Context, root string, env []string) (public, private Registry, err error) {
	if _, err := run(ctx, root, env, "hack/cluster/registry.sh", "up"); err != nil {
		return public, private, err
	}
	out, err := run(ctx, root, env, "hack/cluster/registry.sh", "env")
	if err != nil {
		return public, private, err
	}
	vals := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			vals[k] = v
		}
	}
	public = Registry{PushHost: vals["REGISTRY"]}
	private = Registry{PushHost: vals["PRIVATE_REGISTRY"], Username: vals["PRIVATE_REGISTRY_USER"], Password: vals["PRIVATE_REGISTRY_PASSWORD"]}
	return public, private, nil
}

package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// KWOK brings up the local KWOK cluster of hack/cluster (real control plane,
// fake nodes) with archfilter as its default scheduler, plus the local
// registries, and runs secondary schedulers as local processes.
type KWOK struct {
	Root string
	env  []string
}

// Name implements Provider.
func (k *KWOK) Name() string { return "kwok" }

// e2eEnv gives the suite its own cluster name and registry ports, so it can
// run beside `make demo`. The caller's environment wins.
func e2eEnv() []string {
	defaults := [][2]string{
		{"CLUSTER_NAME", "archfilter-e2e"},
		{"REGISTRY_SET", "e2e"},
		{"REGISTRY_PORT", "5011"},
		{"PRIVATE_REGISTRY_PORT", "5012"},
	}
	var env []string
	for _, kv := range defaults {
		if os.Getenv(kv[0]) == "" {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	return env
}

func (k *KWOK) workDir() string { return filepath.Join(k.Root, ".cache", "e2e") }

// Up implements Provider.
func (k *KWOK) Up(ctx context.Context) (*Env, error) {
	k.env = e2eEnv()
	public, private, err := localRegistries(ctx, k.Root, k.env)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(k.workDir(), 0o755); err != nil {
		return nil, err
	}
	// The cluster's own scheduler: archfilter with the replacement profile.
	cfg, err := LoadSchedulerConfig(filepath.Join(k.Root, "manifests", "scheduler-config", "default-scheduler.yaml"))
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(k.workDir(), "default-scheduler.yaml")
	if err := cfg.AddInsecureRegistries(public.PushHost, private.PushHost).Write(cfgPath); err != nil {
		return nil, err
	}
	out, err := run(ctx, k.Root, k.env, "hack/cluster/up.sh", "--scheduler-config", cfgPath)
	if err != nil {
		return nil, err
	}
	kubeconfig := lastLine(out)
	cs, err := newClient(kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := WaitNodesSchedulable(ctx, cs, NodeNames(DefaultNodes), time.Minute); err != nil {
		return nil, err
	}
	return &Env{
		Provider:                     k.Name(),
		Kubeconfig:                   kubeconfig,
		Client:                       cs,
		Public:                       public,
		Private:                      private,
		Nodes:                        DefaultNodes,
		Registries:                   scriptRegistries{root: k.Root, env: k.env},
		DefaultSchedulerIsArchFilter: true,
		Schedulers: &ProcessLauncher{
			Binary:     schedulerBinary(k.Root),
			Kubeconfig: kubeconfig,
			Template:   filepath.Join(k.Root, "manifests", "scheduler-config", "secondary-scheduler.yaml"),
			Registries: []string{public.PushHost, private.PushHost},
		},
	}, nil
}

// Down implements Provider; E2E_KEEP_CLUSTER=1 keeps everything running.
func (k *KWOK) Down(ctx context.Context) error {
	if os.Getenv("E2E_KEEP_CLUSTER") != "" {
		fmt.Fprintln(os.Stderr, "E2E_KEEP_CLUSTER is set: leaving the cluster and registries up (hack/cluster/down.sh --all removes them)")
		return nil
	}
	_, err := run(ctx, k.Root, k.env, "hack/cluster/down.sh", "--all")
	return err
}

// Existing runs the suite against a KWOK cluster that is already up
// (E2E_KUBECONFIG, e.g. from hack/cluster/up.sh), with the local registries.
type Existing struct {
	Root       string
	Kubeconfig string
}

// Name implements Provider.
func (e *Existing) Name() string { return "existing" }

// Up implements Provider.
func (e *Existing) Up(ctx context.Context) (*Env, error) {
	if e.Kubeconfig == "" {
		return nil, fmt.Errorf("E2E_KUBECONFIG is not set")
	}
	public, private, err := localRegistries(ctx, e.Root, e2eEnv())
	if err != nil {
		return nil, err
	}
	cs, err := newClient(e.Kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := EnsureNodes(ctx, cs, DefaultNodes); err != nil {
		return nil, err
	}
	if err := WaitNodesSchedulable(ctx, cs, NodeNames(DefaultNodes), time.Minute); err != nil {
		return nil, err
	}
	return &Env{
		Provider:                     e.Name(),
		Kubeconfig:                   e.Kubeconfig,
		Client:                       cs,
		Public:                       public,
		Private:                      private,
		Nodes:                        DefaultNodes,
		Registries:                   scriptRegistries{root: e.Root, env: e2eEnv()},
		DefaultSchedulerIsArchFilter: os.Getenv("E2E_DEFAULT_SCHEDULER_IS_ARCHFILTER") == "true",
		Schedulers: &ProcessLauncher{
			Binary:     schedulerBinary(e.Root),
			Kubeconfig: e.Kubeconfig,
			Template:   filepath.Join(e.Root, "manifests", "scheduler-config", "secondary-scheduler.yaml"),
			Registries: []string{public.PushHost, private.PushHost},
		},
	}, nil
}

// Down implements Provider: the cluster is not ours to delete.
func (e *Existing) Down(context.Context) error { return nil }

// ProcessLauncher runs replicas as local processes of the scheduler binary,
// with a copy of the secondary-scheduler config from manifests/.
type ProcessLauncher struct {
	Binary     string
	Kubeconfig string
	Template   string   // manifests/scheduler-config/secondary-scheduler.yaml
	Registries []string // plain-HTTP registry hosts to mark insecure
}

// Launch implements Launcher.
func (l *ProcessLauncher) Launch(ctx context.Context, o LaunchOptions) (Group, error) {
	if _, err := os.Stat(l.Binary); err != nil {
		return nil, fmt.Errorf("scheduler binary: %w (run `make build` or set ARCHFILTER_SCHEDULER_BINARY)", err)
	}
	cfg, err := LoadSchedulerConfig(l.Template)
	if err != nil {
		return nil, err
	}
	cfg.SetKubeconfig(l.Kubeconfig).AddInsecureRegistries(l.Registries...).SetArchFilterArgs(o.ArchFilterArgs).SetPlugins(o.Plugins)
	if o.Name != "" {
		cfg.SetSchedulerName(o.Name)
		var lease, renew, retry time.Duration
		if o.FastLeaderElection {
			lease, renew, retry = 4*time.Second, 3*time.Second, time.Second
		}
		cfg.SetLeaderElection(true, "kube-system", o.Name, lease, renew, retry)
	}
	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(o.LogDir, cfg.SchedulerName()+".yaml")
	if err := cfg.Write(path); err != nil {
		return nil, err
	}
	g := &processGroup{launcher: l, opts: o, config: path, name: cfg.SchedulerName()}
	if o.Replicas < 1 {
		g.opts.Replicas = 1
	}
	// Replicas live until Stop, not until the caller's (per-call) context ends.
	return g, g.start(context.WithoutCancel(ctx))
}

type processGroup struct {
	launcher   *ProcessLauncher
	opts       LaunchOptions
	config     string
	name       string
	generation int
	replicas   []*Scheduler // running
	stopped    []*Scheduler // kept for Logs
}

func (g *processGroup) start(ctx context.Context) error {
	g.generation++
	for i := 0; i < g.opts.Replicas; i++ {
		id := fmt.Sprintf("%s-g%d-%d", g.name, g.generation, i)
		s, err := StartScheduler(ctx, g.launcher.Binary, g.config, g.opts.LogDir, id, g.opts.ExtraArgs...)
		if err != nil {
			g.Stop(ctx)
			return err
		}
		g.replicas = append(g.replicas, s)
	}
	return nil
}

func (g *processGroup) SchedulerName() string { return g.name }

func (g *processGroup) Leader(ctx context.Context, timeout time.Duration) (string, error) {
	s, err := WaitLeader(ctx, timeout, g.replicas...)
	if err != nil {
		return "", err
	}
	return s.Name, nil
}

func (g *processGroup) Crash(_ context.Context, id string) error {
	for _, s := range g.replicas {
		if s.Name == id {
			s.Kill()
			return nil
		}
	}
	return fmt.Errorf("no replica %q", id)
}

func (g *processGroup) Restart(ctx context.Context) error {
	g.Stop(ctx)
	return g.start(context.WithoutCancel(ctx))
}

func (g *processGroup) Stop(context.Context) {
	for _, s := range g.replicas {
		s.Stop()
	}
	g.stopped = append(g.stopped, g.replicas...)
	g.replicas = nil
}

func (g *processGroup) Logs() string {
	var b strings.Builder
	for _, s := range append(g.stopped, g.replicas...) {
		fmt.Fprintf(&b, "--- %s (pid %d, %s):\n%s\n", s.Name, s.PID(), s.LogPath, s.Tail(20))
	}
	return b.String()
}

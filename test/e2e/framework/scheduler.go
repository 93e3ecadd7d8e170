package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// SchedulerConfig is a KubeSchedulerConfiguration read from manifests/ and
// adjusted for a run: kube-scheduler ignores --kubeconfig once --config is
// given, so the copy names the kubeconfig itself.
type SchedulerConfig struct {
	obj map[string]any
}

// LoadSchedulerConfig reads a KubeSchedulerConfiguration file.
func LoadSchedulerConfig(path string) (*SchedulerConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if obj["kind"] != "KubeSchedulerConfiguration" {
		return nil, fmt.Errorf("%s: kind %v, want KubeSchedulerConfiguration", path, obj["kind"])
	}
	return &SchedulerConfig{obj: obj}, nil
}

func (c *SchedulerConfig) child(key string) map[string]any {
	m, ok := c.obj[key].(map[string]any)
	if !ok {
		m = map[string]any{}
		c.obj[key] = m
	}
	return m
}

// SetKubeconfig sets clientConnection.kubeconfig.
func (c *SchedulerConfig) SetKubeconfig(path string) *SchedulerConfig {
	c.child("clientConnection")["kubeconfig"] = path
	return c
}

// SetSchedulerName renames the (first) profile, so a test's pods reach only
// the scheduler it started.
func (c *SchedulerConfig) SetSchedulerName(name string) *SchedulerConfig {
	if profiles, ok := c.obj["profiles"].([]any); ok && len(profiles) > 0 {
		if p, ok := profiles[0].(map[string]any); ok {
			p["schedulerName"] = name
		}
	}
	return c
}

// SchedulerName returns the first profile's schedulerName.
func (c *SchedulerConfig) SchedulerName() string {
	if profiles, ok := c.obj["profiles"].([]any); ok && len(profiles) > 0 {
		if p, ok := profiles[0].(map[string]any); ok {
			if s, ok := p["schedulerName"].(string); ok {
				return s
			}
		}
	}
	return "default-scheduler"
}

// SetLeaderElection sets the lease and, when non-zero, its timing (short
// timings make fail-over tests fast; the defaults are 15s/10s/2s).
func (c *SchedulerConfig) SetLeaderElection(enabled bool, namespace, name string, lease, renew, retry time.Duration) *SchedulerConfig {
	le := c.child("leaderElection")
	le["leaderElect"] = enabled
	if name != "" {
		le["resourceName"] = name
		le["resourceNamespace"] = namespace
	}
	if lease > 0 {
		le["leaseDuration"], le["renewDeadline"], le["retryPeriod"] = lease.String(), renew.String(), retry.String()
	}
	return c
}

// SetPlugins replaces the plugins of every profile, when plugins is not nil.
func (c *SchedulerConfig) SetPlugins(plugins map[string]any) *SchedulerConfig {
	if plugins == nil {
		return c
	}
	profiles, _ := c.obj["profiles"].([]any)
	for _, p := range profiles {
		if pm, ok := p.(map[string]any); ok {
			pm["plugins"] = plugins
		}
	}
	return c
}

// SetDelayCacheUntilActive sets kube-scheduler's delayCacheUntilActive: with
// leader election, a replica starts its informers only once it leads.
func (c *SchedulerConfig) SetDelayCacheUntilActive(delay bool) *SchedulerConfig {
	if delay {
		c.obj["delayCacheUntilActive"] = true
	} else {
		delete(c.obj, "delayCacheUntilActive")
	}
	return c
}

// Lease returns leaderElection's namespace/name ("" when leader election is off).
func (c *SchedulerConfig) Lease() (namespace, name string) {
	le := c.child("leaderElection")
	if on, _ := le["leaderElect"].(bool); !on {
		return "", ""
	}
	namespace, _ = le["resourceNamespace"].(string)
	name, _ = le["resourceName"].(string)
	if namespace == "" {
		namespace = "kube-system"
	}
	if name == "" {
		name = "kube-scheduler"
	}
	return namespace, name
}

// archFilterArgs calls f with the args map of every ArchFilter pluginConfig.
func (c *SchedulerConfig) archFilterArgs(f func(args map[string]any)) {
	profiles, _ := c.obj["profiles"].([]any)
	for _, p := range profiles {
		pm, _ := p.(map[string]any)
		pcs, _ := pm["pluginConfig"].([]any)
		for _, pc := range pcs {
			pcm, _ := pc.(map[string]any)
			if pcm["name"] != "ArchFilter" {
				continue
			}
			args, ok := pcm["args"].(map[string]any)
			if !ok {
				args = map[string]any{}
				pcm["args"] = args
			}
			f(args)
		}
	}
}

// SetArchFilterArgs sets top-level ArchFilter args fields, replacing values.
func (c *SchedulerConfig) SetArchFilterArgs(fields map[string]any) *SchedulerConfig {
	c.archFilterArgs(func(args map[string]any) {
		for k, v := range fields {
			args[k] = v
		}
	})
	return c
}

// AddInsecureRegistries adds registries[] entries with insecure: true to the
// ArchFilter args (plain-HTTP local registries), keeping existing entries.
func (c *SchedulerConfig) AddInsecureRegistries(hosts ...string) *SchedulerConfig {
	c.archFilterArgs(func(args map[string]any) {
		regs, _ := args["registries"].([]any)
	host:
		for _, h := range hosts {
			for _, r := range regs {
				if rm, _ := r.(map[string]any); rm["host"] == h {
					continue host
				}
			}
			regs = append(regs, map[string]any{"host": h, "insecure": true})
		}
		args["registries"] = regs
	})
	return c
}

// Write writes the configuration to path.
func (c *SchedulerConfig) Write(path string) error {
	b, err := yaml.Marshal(c.obj)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Scheduler is one archfilter-scheduler process.
type Scheduler struct {
	*Process
	Name string // replica name, for logs ("le-0")
	Port int    // secure port (healthz, metrics)
}

// StartScheduler runs binary --config configPath with its log in dir. The
// process is killed when ctx ends; Stop ends it gracefully.
func StartScheduler(ctx context.Context, binary, configPath, dir, name string, extraArgs ...string) (*Scheduler, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--config", configPath, "--secure-port", strconv.Itoa(port), "--bind-address", "127.0.0.1", "-v", "2"}, extraArgs...)
	p, err := StartProcess(ctx, binary, filepath.Join(dir, name+".log"), args, nil)
	if err != nil {
		return nil, err
	}
	return &Scheduler{Process: p, Name: name, Port: port}, nil
}

// acquiredLease is what client-go's leader election logs when it becomes
// leader: "successfully acquired lease kube-system/…" up to 1.34,
// "Successfully acquired lease" lock="kube-system/…" (structured) from 1.35.
var acquiredLease = regexp.MustCompile(`(?i)successfully acquired lease`)

// IsLeader reports whether this process has logged acquiring its lease.
func (s *Scheduler) IsLeader() bool { return !s.Exited() && s.LogMatches(acquiredLease) }

// WaitLeader polls until exactly one running replica has acquired the lease,
// and returns it.
func WaitLeader(ctx context.Context, timeout time.Duration, replicas ...*Scheduler) (*Scheduler, error) {
	var leader *Scheduler
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		leader = nil
		running := 0
		for _, s := range replicas {
			if s.Exited() {
				continue
			}
			running++
			if s.IsLeader() {
				if leader != nil {
					return false, fmt.Errorf("two leaders: %s and %s", leader.Name, s.Name)
				}
				leader = s
			}
		}
		if running == 0 {
			return false, errors.New("every scheduler replica has exited")
		}
		return leader != nil, nil
	})
	if err != nil {
		var tails []string
		for _, s := range replicas {
			tails = append(tails, fmt.Sprintf("--- %s (%s):\n%s", s.Name, s.LogPath, s.Tail(15)))
		}
		return nil, fmt.Errorf("no scheduler became leader within %s: %w\n%s", timeout, err, strings.Join(tails, "\n"))
	}
	return leader, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

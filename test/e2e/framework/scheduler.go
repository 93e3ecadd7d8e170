package framework

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
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
	Name    string // replica name, for logs ("le-0")
	LogPath string
	Port    int // secure port (healthz, metrics)

	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  *os.File
}

// StartScheduler runs binary --config configPath with its log in dir. The
// process is killed when ctx ends; Stop ends it gracefully.
func StartScheduler(ctx context.Context, binary, configPath, dir, name string, extraArgs ...string) (*Scheduler, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--config", configPath, "--secure-port", strconv.Itoa(port), "--bind-address", "127.0.0.1", "-v", "2"}, extraArgs...)
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group: a test's SIGKILL of the "leader" hits only it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	s := &Scheduler{Name: name, LogPath: logPath, Port: port, cmd: cmd, done: make(chan struct{}), log: f}
	go func() {
		s.err = cmd.Wait()
		f.Close()
		close(s.done)
	}()
	return s, nil
}

// PID returns the process id.
func (s *Scheduler) PID() int { return s.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (s *Scheduler) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Kill ends the process with SIGKILL (a crash: the lease is not released).
func (s *Scheduler) Kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// Stop ends the process with SIGTERM, then SIGKILL after 10s.
func (s *Scheduler) Stop() {
	if s.Exited() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.Kill()
	}
}

// LogContains reports whether the log has a line containing substr.
func (s *Scheduler) LogContains(substr string) bool {
	return s.anyLogLine(func(line string) bool { return strings.Contains(line, substr) })
}

// LogMatches reports whether a line of the log matches re.
func (s *Scheduler) LogMatches(re *regexp.Regexp) bool { return s.anyLogLine(re.MatchString) }

func (s *Scheduler) anyLogLine(match func(string) bool) bool {
	f, err := os.Open(s.LogPath)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if match(sc.Text()) {
			return true
		}
	}
	return false
}

// Tail returns the last n lines of the log, for failure messages.
func (s *Scheduler) Tail(n int) string {
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
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

package framework

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Process is a binary the suite runs on the host (a scheduler replica, an
// autoscaler, a webhook), its output in a log file.
type Process struct {
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProcess runs binary with args, env added to the test's environment,
// stdout and stderr to logPath (truncated). The process is killed when ctx
// ends; Stop ends it gracefully.
func StartProcess(ctx context.Context, binary, logPath string, args, env []string) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	// Own process group: a test's SIGKILL of the "leader" hits only it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	p := &Process{LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// PID returns the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill ends the process with SIGKILL (a crash: a scheduler's lease is not released).
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop ends the process with SIGTERM, then SIGKILL after 10s.
func (p *Process) Stop() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.Kill()
	}
}

// LogContains reports whether the log has a line containing substr.
func (p *Process) LogContains(substr string) bool {
	return p.anyLogLine(func(line string) bool { return strings.Contains(line, substr) })
}

// LogMatches reports whether a line of the log matches re.
func (p *Process) LogMatches(re *regexp.Regexp) bool { return p.anyLogLine(re.MatchString) }

func (p *Process) anyLogLine(match func(string) bool) bool {
	f, err := os.Open(p.LogPath)
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
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

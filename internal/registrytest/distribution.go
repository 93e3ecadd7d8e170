//go:build linux

package registrytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// distributionBinary is where Debian's docker-registry package installs the
// CNCF Distribution registry.
const distributionBinary = "/usr/bin/docker-registry"

// DistributionOptions configure StartDistribution.
type DistributionOptions struct {
	// Username and Password, when set, protect the registry with htpasswd
	// Basic authentication for this one account (reads included).
	Username, Password string
}

// Distribution is a real CNCF Distribution registry (docker-registry serve)
// on 127.0.0.1 for one test, storing blobs in a temporary directory. Unlike
// the in-memory registry it checks that blobs and child manifests exist when
// a manifest is pushed, and it re-checks bcrypt on every authenticated
// request, as production registries do.
type Distribution struct {
	host               string
	username, password string
}

// StartDistribution starts a registry that t stops on cleanup. It fails the
// test, with installation instructions, when the binary is missing: these
// tests are part of CI, so a missing dependency must not pass as a skip.
func StartDistribution(t testing.TB, opts DistributionOptions) *Distribution {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		bin = distributionBinary
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the CNCF Distribution registry (docker-registry) is not installed: run hack/install-test-deps.sh, "+
			"or apt-get install -y --no-install-recommends docker-registry apache2-utils (%v)", err)
	}
	if (opts.Username == "") != (opts.Password == "") {
		t.Fatalf("StartDistribution: set both Username and Password, or neither")
	}
	dir := t.TempDir()
	var htpasswd string
	if opts.Username != "" {
		htpasswd = filepath.Join(dir, "htpasswd")
		// Minimum cost: the registry runs bcrypt on every request.
		hash, err := bcrypt.GenerateFromPassword([]byte(opts.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatalf("hashing the registry password: %v", err)
		}
		if err := os.WriteFile(htpasswd, []byte(opts.Username+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// The free port is found by binding and releasing it, so another process
	// can take it in between: try a few times.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		host, err := freeLoopbackAddr()
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		cfg := filepath.Join(dir, "config.yml")
		if err := os.WriteFile(cfg, []byte(distributionConfig(host, filepath.Join(dir, "storage"), htpasswd)), 0o600); err != nil {
			t.Fatal(err)
		}
		if lastErr = startDistribution(t, bin, cfg, host); lastErr == nil {
			return &Distribution{host: host, username: opts.Username, password: opts.Password}
		}
	}
	t.Fatalf("starting docker-registry: %v", lastErr)
	return nil
}

func distributionConfig(addr, storage, htpasswd string) string {
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	var b strings.Builder
	fmt.Fprintf(&b, `version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %q
  secret: %q
`, storage, addr, hex.EncodeToString(secret))
	if htpasswd != "" {
		fmt.Fprintf(&b, `auth:
  htpasswd:
    realm: archfilter-test
    path: %q
`, htpasswd)
	}
	return b.String()
}

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startDistribution runs the registry and waits until /v2/ answers. On
// success the process is stopped at t's cleanup.
func startDistribution(t testing.TB, bin, cfg, host string) error {
	var out lockedBuffer
	cmd := exec.Command(bin, "serve", cfg)
	cmd.Stdout, cmd.Stderr = &out, &out
	// Dies with the test binary even when a timeout panic skips cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}

	client := &http.Client{Timeout: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		select {
		case <-exited:
			return fmt.Errorf("docker-registry exited: %s", strings.TrimSpace(out.String()))
		case <-ctx.Done():
			stop()
			return fmt.Errorf("docker-registry on %s not ready after 15s: %s", host, strings.TrimSpace(out.String()))
		case <-time.After(20 * time.Millisecond):
		}
		resp, err := client.Get("http://" + host + "/v2/")
		if err != nil {
			continue
		}
		resp.Body.Close()
		// 401 is ready too: authentication is on.
		if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
			t.Cleanup(stop)
			return nil
		}
	}
}

// Host is "127.0.0.1:PORT", as in image references.
func (d *Distribution) Host() string { return d.host }

// Target lets Fixtures push into this registry.
func (d *Distribution) Target() Target {
	return Target{Host: d.host, Username: d.username, Password: d.password}
}

// lockedBuffer collects the registry's output, written from exec's copying
// goroutine and read by the waiting one.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil // keep the start; that is where startup errors are
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

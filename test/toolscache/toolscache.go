// Package toolscache finds, for tests, the tools hack/cluster/tools.sh builds
// into the per-user tools cache (kubectl, kustomize, etcd, kube-apiserver, ...;
// docs/development.md), and builds them when asked. The cache's keys are
// computed in one place, that script; this package only asks it.
package toolscache

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// script is hack/cluster/tools.sh under the repository root.
func script(root string) string { return filepath.Join(root, "hack", "cluster", "tools.sh") }

// Path returns where the tool named name (tools.sh's names: kubectl,
// kustomize, etcd, ...) is or will be in the cache, without building it.
func Path(root, name string) (string, error) {
	cmd := exec.Command(script(root), "--print", name)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/cluster/tools.sh --print %s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if _, path, ok := strings.Cut(sc.Text(), "="); ok && path != "" {
			return path, nil
		}
	}
	return "", fmt.Errorf("hack/cluster/tools.sh --print %s printed no path: %q", name, out)
}

// Built returns the path of the tool named name if it is in the cache.
func Built(root, name string) (string, bool) {
	p, err := Path(root, name)
	if err != nil {
		return "", false
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", false
	}
	return p, true
}

// Build builds the named tools into the cache when they are not there yet
// (a no-op for those that are; concurrent builders wait for each other) and
// returns the path of the first. Progress goes to stderr.
func Build(root string, names ...string) (string, error) {
	cmd := exec.Command(script(root), names...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/cluster/tools.sh %s: %w", strings.Join(names, " "), err)
	}
	if len(names) == 0 {
		return "", nil
	}
	return Path(root, names[0])
}

package credentials

import (
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// fileRecheck is how often the docker config file is stat'ed for changes: it
// is usually a mounted Secret, which the kubelet updates in place.
const fileRecheck = 10 * time.Second

// fileKeyring is a docker config file, re-read when its size or mtime changes.
type fileKeyring struct {
	path  string
	clock clock.PassiveClock

	mu      sync.Mutex
	ring    keyring
	modTime time.Time
	size    int64
	checked time.Time
	problem string
}

func newFileKeyring(path string, c clock.PassiveClock) (*fileKeyring, error) {
	f := &fileKeyring{path: path, clock: c}
	if err := f.load(); err != nil {
		return nil, err
	}
	f.checked = c.Now()
	return f, nil
}

func (f *fileKeyring) load() error {
	st, err := os.Stat(f.path)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return err
	}
	ring, err := parseDockerConfigFile(b)
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	f.ring, f.modTime, f.size = ring, st.ModTime(), st.Size()
	return nil
}

// current returns the keyring, re-reading the file at most every fileRecheck.
// When a re-read fails, the last good keyring stays in use and the problem is
// reported.
func (f *fileKeyring) current() (keyring, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	if now.Sub(f.checked) < fileRecheck {
		return f.ring, f.problem
	}
	f.checked = now
	st, err := os.Stat(f.path)
	if err == nil && st.ModTime().Equal(f.modTime) && st.Size() == f.size {
		return f.ring, f.problem
	}
	if err == nil {
		err = f.load()
	}
	f.problem = ""
	if err != nil {
		f.problem = fmt.Sprintf("docker config file: %v (using the last good contents)", err)
	}
	return f.ring, f.problem
}

// Package scheduling runs the scheduler with ArchFilter against a real
// kube-apiserver and etcd (in-process) and registries on loopback, and checks
// where pods land and why.
package scheduling

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// TestMain starts one etcd for every test: the test apiserver reads its
// address from KUBE_INTEGRATION_ETCD_URL.
func TestMain(m *testing.M) {
	if os.Getenv(watcherEnv) != "" {
		// A child process of TestCredentialsReceiveOnlyPullSecrets: it
		// measures its own heap and talks to its parent's API server.
		os.Exit(m.Run())
	}
	os.Exit(runWithEtcd(m))
}

func runWithEtcd(m *testing.M) int {
	dir, err := os.MkdirTemp("", "archfilter-etcd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	defer removeTestServerKeys()

	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true
	client, peer, err := freeURLs(2)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)

	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting etcd:", err)
		return 1
	}
	defer etcd.Close()
	select {
	case <-etcd.Server.ReadyNotify():
	case <-time.After(time.Minute):
		fmt.Fprintln(os.Stderr, "etcd did not become ready within a minute")
		return 1
	}
	os.Setenv("KUBE_INTEGRATION_ETCD_URL", client.String())
	return m.Run()
}

// freeURLs returns n loopback URLs on ports free right now.
func freeURLs(n int) (client, peer url.URL, err error) {
	var urls []url.URL
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return url.URL{}, url.URL{}, err
		}
		urls = append(urls, url.URL{Scheme: "http", Host: l.Addr().String()})
		defer l.Close()
	}
	return urls[0], urls[1], nil
}

// removeTestServerKeys deletes the service-account keys the test apiserver
// leaves in the temp directory on every run.
func removeTestServerKeys() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "insecure_test_key*"))
	for _, m := range matches {
		_ = os.Remove(m)
	}
}

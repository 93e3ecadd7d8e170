package credentials

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"golang.org/x/sync/singleflight"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/internal/bounded"
)

const (
	// failureTTL keeps a failing plugin from being run for every lookup.
	failureTTL = 10 * time.Second
	// maxProviderCache bounds cached answers per plugin: image keys come from
	// pod authors.
	maxProviderCache = 1000
	// maxPluginOutput bounds what a plugin may write.
	maxPluginOutput = 1 << 20
)

// Config and protocol versions this package reads. The v1beta1 and v1alpha1
// shapes are identical for the fields used here.
var (
	configVersions = map[string]bool{
		"kubelet.config.k8s.io/v1":       true,
		"kubelet.config.k8s.io/v1beta1":  true,
		"kubelet.config.k8s.io/v1alpha1": true,
	}
	protocolVersions = map[string]bool{
		"credentialprovider.kubelet.k8s.io/v1":       true,
		"credentialprovider.kubelet.k8s.io/v1beta1":  true,
		"credentialprovider.kubelet.k8s.io/v1alpha1": true,
	}
)

// provider runs one kubelet credential provider plugin with the exec
// protocol (CredentialProviderRequest on stdin, CredentialProviderResponse on
// stdout) and caches its answers as the kubelet does, by the response's
// cacheKeyType and cacheDuration.
//
// kubelet's own implementation (k8s.io/kubernetes/pkg/credentialprovider/plugin)
// registers providers in package globals and kubelet metrics, so it is not
// reused here.
type provider struct {
	name                 string
	bin                  string
	args                 []string
	env                  []string
	apiVersion           string
	matchImages          []string
	defaultCacheDuration time.Duration
	timeout              time.Duration
	clock                clock.PassiveClock
	// unsupported says why the plugin is never run (it wants service account
	// tokens, which the scheduler cannot mint for a pod).
	unsupported string

	flight      singleflight.Group
	mu          sync.Mutex
	cache       map[string]cachedAnswer
	prefetching map[string]bool
}

type cachedAnswer struct {
	ring    keyring
	err     error
	expires time.Time
}

func (p *provider) source() string { return "credential provider " + p.name }

func loadProviders(configPath, binDir string, timeout time.Duration, c clock.PassiveClock) ([]*provider, error) {
	b, err := os.ReadFile(configPath)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(b, &tm); err != nil {
		return nil, fmt.Errorf("%s: %w", configPath, err)
	}
	if tm.Kind != "CredentialProviderConfig" || !configVersions[tm.APIVersion] {
		return nil, fmt.Errorf("%s: want kind CredentialProviderConfig of kubelet.config.k8s.io/v1, got %q %q", configPath, tm.APIVersion, tm.Kind)
	}
	var cfg kubeletconfigv1.CredentialProviderConfig
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", configPath, err)
	}
	var out []*provider
	names := map[string]bool{}
	for i, cp := range cfg.Providers {
		field := fmt.Sprintf("providers[%d]", i)
		switch {
		case cp.Name == "" || cp.Name == "." || cp.Name == ".." || strings.ContainsAny(cp.Name, `/\`):
			return nil, fmt.Errorf("%s.name: %q must be a file name in the bin dir", field, cp.Name)
		case names[cp.Name]:
			return nil, fmt.Errorf("%s.name: %q appears twice", field, cp.Name)
		case len(cp.MatchImages) == 0:
			return nil, fmt.Errorf("%s.matchImages: must not be empty", field)
		case cp.DefaultCacheDuration == nil || cp.DefaultCacheDuration.Duration < 0:
			return nil, fmt.Errorf("%s.defaultCacheDuration: must be set and not negative", field)
		case !protocolVersions[cp.APIVersion]:
			return nil, fmt.Errorf("%s.apiVersion: %q is not a credentialprovider.kubelet.k8s.io version", field, cp.APIVersion)
		}
		for j, mi := range cp.MatchImages {
			host, _ := splitTarget(mi)
			if _, err := path.Match(host, ""); err != nil || host == "" {
				return nil, fmt.Errorf("%s.matchImages[%d]: malformed %q", field, j, mi)
			}
		}
		names[cp.Name] = true
		bin, err := exec.LookPath(filepath.Join(binDir, cp.Name))
		if err != nil {
			return nil, fmt.Errorf("%s: plugin binary: %w", field, err)
		}
		p := &provider{
			name:                 cp.Name,
			bin:                  bin,
			args:                 cp.Args,
			apiVersion:           cp.APIVersion,
			matchImages:          cp.MatchImages,
			defaultCacheDuration: cp.DefaultCacheDuration.Duration,
			timeout:              timeout,
			clock:                c,
			cache:                map[string]cachedAnswer{},
			prefetching:          map[string]bool{},
		}
		for _, e := range cp.Env {
			p.env = append(p.env, e.Name+"="+e.Value)
		}
		if cp.TokenAttributes != nil {
			p.unsupported = fmt.Sprintf("credential provider %s needs service account tokens, which archfilter does not mint; it is skipped", cp.Name)
			klog.Background().Info("Credential provider skipped: it needs service account tokens", "provider", cp.Name)
		}
		out = append(out, p)
	}
	return out, nil
}

// applies reports whether target is one of the plugin's matchImages.
func (p *provider) applies(target string) bool {
	for _, mi := range p.matchImages {
		if matches(mi, target) {
			return true
		}
	}
	return false
}

// cacheKeys are the keys an answer for target may be cached under, in
// kubelet's lookup order.
func cacheKeys(target string) []string {
	host, _ := splitTarget(target)
	return []string{"image:" + target, "registry:" + host, "global"}
}

// cached returns the cached answer for target, or ok=false when the plugin
// has to run. A plugin that does not apply has an empty answer.
func (p *provider) cached(target string) (keyring, bool) {
	if p.unsupported != "" || !p.applies(target) {
		return nil, true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	for _, k := range cacheKeys(target) {
		if a, ok := p.cache[k]; ok && now.Before(a.expires) {
			return a.ring, true
		}
	}
	return nil, false
}

// get returns the answer for target, running the plugin when it is not
// cached. Concurrent calls for one target share one run.
func (p *provider) get(ctx context.Context, target string) (keyring, error) {
	if p.unsupported != "" {
		if p.applies(target) {
			return nil, errors.New(p.unsupported)
		}
		return nil, nil
	}
	if ring, ok := p.cached(target); ok {
		return ring, nil
	}
	if err := p.recentFailure(target); err != nil {
		return nil, err
	}
	ch := p.flight.DoChan(target, func() (any, error) {
		// Detached from the first caller's context: others share the run.
		runCtx, cancel := context.WithTimeout(context.Background(), p.timeout)
		defer cancel()
		return p.run(runCtx, target)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(keyring), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", p.source(), ctx.Err())
	}
}

// prefetch runs the plugin for target in the background, for For's callers
// that cannot wait.
func (p *provider) prefetch(target string) {
	if p.recentFailure(target) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prefetching[target] {
		return // one waiting goroutine per target is enough
	}
	p.prefetching[target] = true
	go func() {
		_, _ = p.get(context.Background(), target)
		p.mu.Lock()
		delete(p.prefetching, target)
		p.mu.Unlock()
	}()
}

// recentFailure is the plugin's error for target if it failed less than
// failureTTL ago.
func (p *provider) recentFailure(target string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.cache["failed:"+target]; ok && p.clock.Now().Before(a.expires) {
		return a.err
	}
	return nil
}

// run executes the plugin and caches its answer (or failure).
func (p *provider) run(ctx context.Context, target string) (keyring, error) {
	resp, err := p.exec(ctx, target)
	now := p.clock.Now()
	if err != nil {
		p.store("failed:"+target, cachedAnswer{err: err, expires: now.Add(failureTTL)})
		return nil, err
	}
	auths := make(map[string]authn.AuthConfig, len(resp.Auth))
	for k, a := range resp.Auth {
		auths[k] = authn.AuthConfig{Username: a.Username, Password: a.Password}
	}
	ring := newKeyring(auths)

	ttl := p.defaultCacheDuration
	if resp.CacheDuration != nil {
		ttl = resp.CacheDuration.Duration
	}
	if ttl > 0 {
		host, _ := splitTarget(target)
		key := map[credentialproviderv1.PluginCacheKeyType]string{
			credentialproviderv1.ImagePluginCacheKeyType:    "image:" + target,
			credentialproviderv1.RegistryPluginCacheKeyType: "registry:" + host,
			credentialproviderv1.GlobalPluginCacheKeyType:   "global",
		}[resp.CacheKeyType]
		p.store(key, cachedAnswer{ring: ring, expires: now.Add(ttl)})
	}
	return ring, nil
}

func (p *provider) store(key string, a cachedAnswer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	bounded.Trim(p.cache, maxProviderCache, func(old cachedAnswer) bool { return !now.Before(old.expires) })
	p.cache[key] = a
}

// exec runs the plugin once. Errors never include its output: stdout carries
// credentials, and stderr might.
func (p *provider) exec(ctx context.Context, image string) (*credentialproviderv1.CredentialProviderResponse, error) {
	req := credentialproviderv1.CredentialProviderRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: p.apiVersion, Kind: "CredentialProviderRequest"},
		Image:    image,
	}
	in, err := json.Marshal(&req)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", p.source(), err)
	}
	var stdout, stderr cappedBuffer
	stdout.max, stderr.max = maxPluginOutput, 4<<10
	cmd := exec.CommandContext(ctx, p.bin, p.args...)
	// The host environment plus the configured variables, which win, as
	// with the kubelet (cloud plugins read credentials from the environment).
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second // do not wait for grandchildren holding the pipes
	start := time.Now()
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: no answer within %s", p.source(), p.timeout)
	}
	if err != nil {
		klog.Background().V(4).Info("Credential provider failed", "provider", p.name, "err", err, "duration", time.Since(start))
		return nil, fmt.Errorf("%s: %v", p.source(), err)
	}
	var resp credentialproviderv1.CredentialProviderResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("%s: response is not a CredentialProviderResponse", p.source())
	}
	if resp.APIVersion != p.apiVersion || resp.Kind != "CredentialProviderResponse" {
		return nil, fmt.Errorf("%s: response is %q %q, want %s CredentialProviderResponse", p.source(), resp.APIVersion, resp.Kind, p.apiVersion)
	}
	switch resp.CacheKeyType {
	case credentialproviderv1.ImagePluginCacheKeyType, credentialproviderv1.RegistryPluginCacheKeyType, credentialproviderv1.GlobalPluginCacheKeyType:
	default:
		return nil, fmt.Errorf("%s: response has cacheKeyType %q, want Image, Registry or Global", p.source(), resp.CacheKeyType)
	}
	return &resp, nil
}

// cappedBuffer fails writes past max, so a runaway plugin cannot fill memory.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, fmt.Errorf("plugin wrote more than %d bytes", b.max)
	}
	return b.Buffer.Write(p)
}

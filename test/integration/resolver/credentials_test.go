//go:build linux

package resolver_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/resolver"
	"github.com/archfilter/archfilter/pkg/resolver/credentials"
	"github.com/archfilter/archfilter/pkg/resolver/transport"
)

// credentialSource gives a pod the credential user:pass for host one way.
type credentialSource struct {
	name  string
	setup func(t *testing.T, host, user, pass string) storeSetup
}

// credentialSources are every source the kubelet would use, each alone.
func credentialSources(pluginDir string) []credentialSource {
	return []credentialSource{
		{"pod imagePullSecret (dockerconfigjson)", func(t *testing.T, host, user, pass string) storeSetup {
			return storeSetup{
				objs:   []runtime.Object{dockerConfigJSONSecret(tenant, "regcred", host, user, pass)},
				pod:    pod("", "regcred"),
				source: "pod imagePullSecret tenant/regcred",
			}
		}},
		{"pod imagePullSecret (legacy dockercfg)", func(t *testing.T, host, user, pass string) storeSetup {
			return storeSetup{
				objs:   []runtime.Object{dockercfgSecret(tenant, "legacy", host, user, pass)},
				pod:    pod("", "legacy"),
				source: "pod imagePullSecret tenant/legacy",
			}
		}},
		{"ServiceAccount imagePullSecret", func(t *testing.T, host, user, pass string) storeSetup {
			return storeSetup{
				objs: []runtime.Object{
					dockerConfigJSONSecret(tenant, "sa-pull", host, user, pass),
					serviceAccount("builder", "sa-pull"),
				},
				pod:    pod("builder"),
				source: "serviceaccount tenant/builder imagePullSecret sa-pull",
			}
		}},
		{"global pull secret", func(t *testing.T, host, user, pass string) storeSetup {
			return storeSetup{
				opts:   credentials.Options{GlobalPullSecret: &types.NamespacedName{Namespace: globalNS, Name: globalSecret}},
				objs:   []runtime.Object{dockerConfigJSONSecret(globalNS, globalSecret, host, user, pass)},
				pod:    pod(""),
				source: "global pull secret " + globalNS + "/" + globalSecret,
			}
		}},
		{"docker config file", func(t *testing.T, host, user, pass string) storeSetup {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, dockerConfigJSON(host, user, pass), 0o600); err != nil {
				t.Fatal(err)
			}
			return storeSetup{
				opts:   credentials.Options{DockerConfigFile: path},
				pod:    pod(""),
				source: "docker config file " + path,
			}
		}},
		{"credential provider plugin", func(t *testing.T, host, user, pass string) storeSetup {
			return storeSetup{
				opts: credentials.Options{
					CredentialProviderConfig: providerConfig(t, host, user, pass),
					CredentialProviderBinDir: pluginDir,
				},
				pod:    pod(""),
				source: "credential provider fake-provider",
			}
		}},
	}
}

// TestPrivateRepository resolves a private index and a private single-arch image (manifest
// and config blob both need the credential) with each credential source alone, right and
// wrong, and anonymously.
func TestPrivateRepository(t *testing.T) {
	sources := credentialSources(buildPlugin(t))

	forEachRegistry(t, func(t *testing.T, reg *registry) {
		f := reg.fixtures(t)
		index := f.Index("private/app:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
		single := f.Image("private/single:v1", registrytest.Docker, "linux/s390x")
		images := []struct {
			ref  string
			want outcome
		}{
			{index.Ref, ok("linux/amd64", "linux/arm64")},
			{single.Ref, ok("linux/s390x")},
		}

		type tc struct {
			name       string
			setup      storeSetup
			wrong      bool
			wantSource string
		}
		var cases []tc
		for _, s := range sources {
			right := s.setup(t, reg.host, account, password)
			cases = append(cases, tc{name: s.name, setup: right})
			wrong := s.setup(t, reg.host, account, wrongPassword)
			cases = append(cases, tc{name: s.name + ", wrong password", setup: wrong, wrong: true, wantSource: wrong.source})
		}
		cases = append(cases,
			tc{name: "no credentials", setup: storeSetup{pod: pod("")}, wrong: true, wantSource: "anonymous"},
			// Candidates are tried in kubelet order until one is accepted.
			tc{name: "wrong pod secret, then the right ServiceAccount secret", setup: storeSetup{
				objs: []runtime.Object{
					dockerConfigJSONSecret(tenant, "stale", reg.host, account, wrongPassword),
					dockerConfigJSONSecret(tenant, "sa-pull", reg.host, account, password),
					serviceAccount("builder", "sa-pull"),
				},
				pod: pod("builder", "stale"),
			}},
			// The failure names the last candidate tried.
			tc{name: "two wrong secrets", setup: storeSetup{
				opts: credentials.Options{GlobalPullSecret: &types.NamespacedName{Namespace: globalNS, Name: globalSecret}},
				objs: []runtime.Object{
					dockerConfigJSONSecret(tenant, "stale", reg.host, account, wrongPassword),
					dockercfgSecret(globalNS, globalSecret, reg.host, "someone-else", password),
				},
				pod: pod("", "stale"),
			}, wrong: true, wantSource: "global pull secret " + globalNS + "/" + globalSecret},
		)

		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				_, ctx := ktesting.NewTestContext(t)
				// A resolver per case: another case's cached answer must not help.
				r := newResolver(t, transport.Options{}, resolver.Options{})
				creds := credentialsFor(t, c.setup)
				for _, img := range images {
					res := r.Resolve(ctx, resolver.Request{Image: img.ref, Credentials: creds})
					if !c.wrong {
						if diff := cmp.Diff(img.want, outcomeOf(res)); diff != "" {
							t.Errorf("Resolve(%s) (-want,+got):\n%s\nerr: %v", img.ref, diff, res.Err)
						}
						continue
					}
					e := resolveErr(t, res)
					got := errorFields{e.Image, e.Registry, e.CredentialSource, e.StatusCode, e.Reason}
					want := errorFields{img.ref, reg.host, c.wantSource, http.StatusUnauthorized, resolver.ReasonUnauthorized}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("Resolve(%s) error (-want,+got):\n%s\nerr: %v", img.ref, diff, e)
					}
					msg := e.Error()
					for _, name := range []string{img.ref, reg.host, c.wantSource, string(resolver.ReasonUnauthorized)} {
						if !strings.Contains(msg, name) {
							t.Errorf("error %q does not name %q", msg, name)
						}
					}
					for _, secret := range []string{password, wrongPassword, basicAuth(account, wrongPassword)} {
						if strings.Contains(msg, secret) {
							t.Errorf("error %q leaks secret material", msg)
						}
					}
				}
			})
		}
	})
}

// TestTenantIsolation checks, with real pull secrets on one resolver, that an answer
// obtained with one pod's credential is never served to a pod without it.
func TestTenantIsolation(t *testing.T) {
	forEachRegistry(t, func(t *testing.T, reg *registry) {
		_, ctx := ktesting.NewTestContext(t)
		img := reg.fixtures(t).Index("private/isolated:v1", registrytest.OCI, "linux/arm64")
		r := newResolver(t, transport.Options{}, resolver.Options{})
		owner := resolver.Request{Image: img.Ref, Credentials: podSecretCredentials(t, reg.host)}
		stranger := resolver.Request{Image: img.Ref, Credentials: credentialsFor(t, storeSetup{pod: pod("")})}
		thief := resolver.Request{Image: img.Ref, Credentials: credentialsFor(t, storeSetup{
			objs: []runtime.Object{dockerConfigJSONSecret(tenant, "guess", reg.host, account, wrongPassword)},
			pod:  pod("", "guess"),
		})}

		if diff := cmp.Diff(ok("linux/arm64"), outcomeOf(r.Resolve(ctx, owner))); diff != "" {
			t.Fatalf("owner (-want,+got):\n%s", diff)
		}
		for name, req := range map[string]resolver.Request{"no credentials": stranger, "a wrong credential": thief} {
			if res, found := r.Lookup(req); found {
				t.Errorf("Lookup with %s served %+v from the owner's answer", name, outcomeOf(res))
			}
			if diff := cmp.Diff(failed(resolver.ReasonUnauthorized), outcomeOf(r.Resolve(ctx, req))); diff != "" {
				t.Errorf("Resolve with %s (-want,+got):\n%s", name, diff)
			}
		}
		// And the strangers' failures do not spoil the owner's answer.
		if res, found := r.Lookup(owner); !found || res.Err != nil {
			t.Errorf("owner's Lookup = %+v, %t; want the cached answer", outcomeOf(res), found)
		}
	})
}

// errorFields are the parts of a *resolver.Error a person acts on.
type errorFields struct {
	Image, Registry, CredentialSource string
	StatusCode                        int
	Reason                            resolver.Reason
}

// buildPlugin builds pkg/resolver/credentials/testdata/fakeprovider into a bin dir as
// "fake-provider" and returns the dir.
func buildPlugin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "fake-provider"), "./pkg/resolver/credentials/testdata/fakeprovider")
	cmd.Dir = moduleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the test credential provider: %v\n%s", err, out)
	}
	return dir
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// providerConfig writes a kubelet CredentialProviderConfig running the fake plugin for
// host. The plugin answers "plugin-user" with "plugin-pass-N", N counting its runs in a log
// when it has one and 1 otherwise: for plugin-pass-1 it gets no log, so that it answers the
// same however often it runs; for plugin-pass-N, N-1 runs are logged in advance (more runs
// keep the password wrong).
func providerConfig(t *testing.T, host, user, pass string) string {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(pass, "plugin-pass-"))
	if user != account || err != nil || n < 1 {
		t.Fatalf("the fake plugin cannot answer %s:%s", user, pass)
	}
	dir := t.TempDir()
	env := ""
	if n > 1 {
		runLog := filepath.Join(dir, "runs.log")
		if err := os.WriteFile(runLog, []byte(strings.Repeat("earlier run\n", n-1)), 0o600); err != nil {
			t.Fatal(err)
		}
		env = fmt.Sprintf("  env:\n  - name: FAKE_PROVIDER_LOG\n    value: %q\n", runLog)
	}
	cfg := filepath.Join(dir, "credential-provider.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: fake-provider
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  matchImages: [%q]
  defaultCacheDuration: 1h
%s`, host, env)), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

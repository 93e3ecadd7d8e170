//go:build linux

// Package resolver_test is the conformance suite for issue 3's "Done when" list: every
// image shape, credential source and failure the resolver must handle, resolved through
// the production stack (resolver.New over transport.New's RoundTripper and Endpoints, with
// credentials from credentials.NewStore over informers or a docker config file, exactly as
// pkg/plugins/archfilter/wiring.go builds them) against two registries: go-containerregistry's
// in-memory one (registrytest.NewMemory, Bearer token auth) and a real CNCF Distribution
// (registrytest.StartDistribution, htpasswd Basic auth). A missing docker-registry binary
// fails the suite; hack/install-test-deps.sh installs it.
//
// Request counts for the in-memory registry (index = 1 GET + one handshake per repository,
// single-arch = 2, cached = 0, revalidation = 1 HEAD, 1 000 concurrent lookups = 1 fetch)
// are pinned by pkg/resolver/requests_test.go; requests_test.go here repeats them for
// Distribution only, through the production transport.
package resolver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/resolver"
	"github.com/archfilter/archfilter/pkg/resolver/credentials"
	"github.com/archfilter/archfilter/pkg/resolver/transport"
)

func TestMain(m *testing.M) {
	// As the plugin's wiring does, before anything measures.
	resolver.RegisterMetrics()
	os.Exit(m.Run())
}

// The one account every registry here has. The test credential provider plugin
// (pkg/resolver/credentials/testdata/fakeprovider) always answers "plugin-user" with
// "plugin-pass-<run number>", so the registries use the answer of its first run, and every
// other credential source carries the same account: what differs between sources is how
// the credential reaches the resolver, not what it is.
const (
	account       = "plugin-user"
	password      = "plugin-pass-1"
	wrongPassword = "plugin-pass-2" // also the plugin's answer on its second run
)

// registry is one registry under test, filled by fixtures, and the place tests break it.
type registry struct {
	kind string
	// host is "127.0.0.1:PORT", the registry part of the references fixtures return.
	host   string
	target registrytest.Target
	// handshake is what authenticating to one repository costs, as the registry logs it.
	handshake map[string]int
	// faulty serves the same content as host, with faults and a request log.
	faulty faultyRegistry
}

// faultyRegistry is a registry whose answers a test can break and whose requests it can
// count: the in-memory registry itself, or a proxy in front of Distribution, whose access
// log StartDistribution disables.
type faultyRegistry interface {
	Host() string
	AddFault(registrytest.Fault) (remove func())
	Counts() map[string]int
	Reset()
}

func (r *registry) fixtures(t *testing.T) *registrytest.Fixtures {
	return registrytest.NewFixtures(t, r.target)
}

// registryKinds are the registries every test runs against.
var registryKinds = []struct {
	name  string
	start func(t *testing.T) *registry
}{
	{"memory", startMemory},
	{"distribution", startDistribution},
}

// forEachRegistry runs test once per registry kind, each with its own registry.
func forEachRegistry(t *testing.T, test func(t *testing.T, reg *registry)) {
	for _, k := range registryKinds {
		t.Run(k.name, func(t *testing.T) { test(t, k.start(t)) })
	}
}

func startMemory(t *testing.T) *registry {
	// Repositories under private/ need the account; the others are public, as on Docker
	// Hub. Distribution's htpasswd makes every repository private.
	m := registrytest.NewMemory(t, registrytest.WithBearerAuth(account, password, "private/*"))
	return &registry{
		kind:      "memory",
		host:      m.Host(),
		target:    m.Target(),
		handshake: map[string]int{"GET /v2/ 401": 1, "GET /token 200": 1},
		faulty:    memoryFaults{m},
	}
}

func startDistribution(t *testing.T) *registry {
	// Fails, rather than skips, when docker-registry is missing.
	d := registrytest.StartDistribution(t, registrytest.DistributionOptions{Username: account, Password: password})
	return &registry{
		kind:      "distribution",
		host:      d.Host(),
		target:    d.Target(),
		handshake: map[string]int{"GET /v2/ 401": 1},
		faulty:    newFront(t, d.Host()),
	}
}

type memoryFaults struct{ m *registrytest.Memory }

func (f memoryFaults) Host() string                                    { return f.m.Host() }
func (f memoryFaults) AddFault(flt registrytest.Fault) (remove func()) { return f.m.AddFault(flt) }
func (f memoryFaults) Counts() map[string]int                          { return f.m.Requests.Counts() }
func (f memoryFaults) Reset()                                          { f.m.Requests.Reset() }

// on rewrites a reference pushed to reg so that it names host instead ("front" proxies
// serve the same repositories under another address).
func (r *registry) on(host, ref string) string {
	if !strings.HasPrefix(ref, r.host+"/") {
		panic("reference " + ref + " is not on " + r.host)
	}
	return host + strings.TrimPrefix(ref, r.host)
}

// front is an HTTP server in front of a registry: it forwards every request, records it
// ("GET /v2/app/manifests/v1 200", as registrytest.RequestLog does), and applies
// registrytest.Fault rules, redirects included. The Host header is passed on unchanged, so
// a bearer realm the registry builds from it points back at the front.
type front struct {
	srv    *httptest.Server
	faults *registrytest.Faults

	mu  sync.Mutex
	log []string
}

func newFront(t *testing.T, upstream string) *front {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: upstream})
	proxy.Transport = tr
	// A client that gives up mid-request is what the slow-server tests do.
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	f := &front{faults: registrytest.NewFaults()}
	next := f.faults.Wrap(proxy)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &registrytest.StatusRecorder{ResponseWriter: w, Record: func(status int) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.log = append(f.log, r.Method+" "+r.URL.Path+" "+strconv.Itoa(status))
		}}
		defer sw.Done()
		next.ServeHTTP(sw, r)
	}))
	t.Cleanup(func() {
		f.faults.Close()
		f.srv.CloseClientConnections()
		f.srv.Close()
		tr.CloseIdleConnections()
	})
	return f
}

func (f *front) Host() string { return f.srv.Listener.Addr().String() }

func (f *front) AddFault(flt registrytest.Fault) (remove func()) { return f.faults.Add(flt) }

// Redirect answers matching requests with 307 to location(request).
func (f *front) Redirect(method, pathPrefix string, location func(*http.Request) string) (remove func()) {
	return f.faults.Add(registrytest.Fault{Method: method, Path: pathPrefix, Location: location})
}

func (f *front) Counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[string]int{}
	for _, r := range f.log {
		m[r]++
	}
	return m
}

func (f *front) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = nil
}

// newResolver builds the production stack: a transport.Transport with topts, and a
// resolver whose Transport and Endpoints are the transport's.
func newResolver(t *testing.T, topts transport.Options, ropts resolver.Options) *resolver.Resolver {
	t.Helper()
	tr, err := transport.New(topts)
	if err != nil {
		t.Fatalf("transport.New: %v", err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	ropts.Transport = tr.RoundTripper()
	ropts.Endpoints = tr.Endpoints
	r, err := resolver.New(ropts)
	if err != nil {
		t.Fatalf("resolver.New: %v", err)
	}
	return r
}

// startRun runs r's workers until the test ends.
func startRun(t *testing.T, r *resolver.Resolver) context.Context {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
	return ctx
}

// Where the pods under test live, and the global pull secret.
const (
	tenant       = "tenant"
	globalSecret = "archfilter-pull-secret"
	globalNS     = "kube-system"
)

// storeSetup is one way of giving a pod a credential: Store options, the API objects the
// informers serve, the pod, and the Source the resolver reports for the credential.
type storeSetup struct {
	opts   credentials.Options
	objs   []runtime.Object
	pod    *v1.Pod
	source string
}

// credentialsFor starts a Store over a fake clientset holding s.objs, as the scheduler's
// informer factory would, and returns s.pod's credentials.
func credentialsFor(t *testing.T, s storeSetup) resolver.Credentials {
	t.Helper()
	objs := append([]runtime.Object{serviceAccount("default")}, s.objs...)
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	store, err := credentials.NewStore(ctx, client, f, s.opts)
	if err != nil {
		cancel()
		t.Fatalf("credentials.NewStore: %v", err)
	}
	f.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	f.WaitForCacheSync(ctx.Done())
	// The Store's own pull-secret informers are not f's.
	if !cache.WaitForCacheSync(ctx.Done(), store.HasSynced) {
		t.Fatal("credential store not synced")
	}
	pc := store.ForPod(s.pod)
	if p, ok := pc.(*credentials.PodCredentials); ok {
		t.Cleanup(func() {
			if probs := p.Problems(); len(probs) > 0 {
				t.Logf("credential problems: %v", probs)
			}
		})
	}
	return pc
}

// podSecretCredentials is the everyday case: a pod whose imagePullSecret (a
// kubernetes.io/dockerconfigjson secret) holds the account for host.
func podSecretCredentials(t *testing.T, host string) resolver.Credentials {
	t.Helper()
	return credentialsFor(t, storeSetup{
		objs: []runtime.Object{dockerConfigJSONSecret(tenant, "regcred", host, account, password)},
		pod:  pod("", "regcred"),
	})
}

func pod(serviceAccountName string, pullSecrets ...string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "app", UID: "app-uid"},
		Spec: v1.PodSpec{
			ServiceAccountName: serviceAccountName,
			Containers:         []v1.Container{{Name: "app", Image: "set-by-the-test"}},
		},
	}
	for _, s := range pullSecrets {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
	}
	return p
}

func serviceAccount(name string, pullSecrets ...string) *v1.ServiceAccount {
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: name}}
	for _, s := range pullSecrets {
		sa.ImagePullSecrets = append(sa.ImagePullSecrets, v1.LocalObjectReference{Name: s})
	}
	return sa
}

func basicAuth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// dockerConfigJSON is {"auths": {key: {"auth": base64(user:pass)}}}, the format of
// kubernetes.io/dockerconfigjson secrets and of ~/.docker/config.json.
func dockerConfigJSON(key, user, pass string) []byte {
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{key: map[string]string{"auth": basicAuth(user, pass)}}})
	return b
}

func dockerConfigJSONSecret(ns, name, key, user, pass string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name)},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: dockerConfigJSON(key, user, pass)},
	}
}

// dockercfgSecret is a legacy kubernetes.io/dockercfg secret: the auths map alone, keyed
// the old way ("http://host/v1/"), with the email field old clients wrote.
func dockercfgSecret(ns, name, host, user, pass string) *v1.Secret {
	b, _ := json.Marshal(map[string]any{"http://" + host + "/v1/": map[string]string{
		"auth": basicAuth(user, pass), "email": "ci@example.com",
	}})
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name)},
		Type:       v1.SecretTypeDockercfg,
		Data:       map[string][]byte{v1.DockerConfigKey: b},
	}
}

// outcome is what tests compare: the platforms ("os/arch[/variant][:os.version]"), Any for
// images that never constrain, or the failure's reason.
type outcome struct {
	Platforms []string
	Any       bool
	Reason    resolver.Reason
}

func outcomeOf(res resolver.Result) outcome {
	if res.Err != nil {
		return outcome{Reason: resolver.ReasonOf(res.Err)}
	}
	if res.Platforms.IsAny() {
		return outcome{Any: true}
	}
	var ps []string
	for _, p := range res.Platforms.Platforms() {
		s := p.String()
		if p.OSVersion != "" {
			s += ":" + p.OSVersion
		}
		ps = append(ps, s)
	}
	return outcome{Platforms: ps}
}

func ok(platforms ...string) outcome { return outcome{Platforms: platforms} }

func anyPlatform() outcome { return outcome{Any: true} }

func failed(r resolver.Reason) outcome { return outcome{Reason: r} }

// resolveErr returns res's *resolver.Error, failing the test when there is none.
func resolveErr(t *testing.T, res resolver.Result) *resolver.Error {
	t.Helper()
	var e *resolver.Error
	if !errors.As(res.Err, &e) {
		t.Fatalf("got %+v, want a *resolver.Error", res)
	}
	return e
}

// expectCounts compares a registry's request log with the sum of wants, then resets it.
func expectCounts(t *testing.T, reg faultyRegistry, wants ...map[string]int) {
	t.Helper()
	want := map[string]int{}
	for _, w := range wants {
		for k, v := range w {
			want[k] += v
		}
	}
	if diff := cmp.Diff(want, reg.Counts()); diff != "" {
		t.Errorf("registry requests (-want,+got):\n%s", diff)
	}
	reg.Reset()
}

// poll calls cond until it holds or a deadline passes.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

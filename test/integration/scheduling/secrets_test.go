package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	testutils "k8s.io/kubernetes/test/integration/util"

	"github.com/archfilter/archfilter/pkg/resolver/credentials"
)

const (
	opaqueSecrets  = 10000
	pullSecretsNum = 10
	// opaqueSecretBytes is about a TLS key and certificate.
	opaqueSecretBytes = 2048
)

// The credential store asks the API server for pull secrets only (issue 29):
// among 10 000 other secrets it receives the 10 pull secrets, cluster-wide or
// in its namespaces, and none from a namespace it does not read. The old way
// (one informer on every secret, with the data of other secrets dropped on
// arrival) is measured beside it. Each way runs in a child process, so the
// heap it reports is its own. Objects received are asserted; the bytes read
// and the heap are logged (docs/configuration.md, "Pull secrets: which reach
// archfilter"), not asserted.
func TestCredentialsReceiveOnlyPullSecrets(t *testing.T) {
	testCtx := testutils.InitTestAPIServer(t, "secrets", nil)
	ns := testCtx.NS.Name
	cfg := rest.CopyConfig(testCtx.KubeConfig)
	cfg.QPS = -1 // creating 10 000 secrets at the default 5/s would take half an hour
	cs := clientset.NewForConfigOrDie(cfg)
	createSecrets(t, testCtx.Ctx, cs, ns)
	// No controller-manager runs to create it.
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(testCtx.Ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		// watcher is a secretWatchers key; namespaces its SecretNamespaces.
		watcher    string
		namespaces string
		want       int64
	}{
		{name: "every secret (before)", watcher: "every-secret", want: opaqueSecrets + pullSecretsNum},
		{name: "pull secrets (after)", watcher: "store", want: pullSecretsNum},
		{name: "pull secrets of the pod's namespace", watcher: "store", namespaces: ns, want: pullSecretsNum},
		{name: "pull secrets of another namespace", watcher: "store", namespaces: "elsewhere", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := runWatcher(t, testCtx.KubeConfig, tc.watcher, tc.namespaces)
			if m.Received != tc.want {
				t.Errorf("received %d secrets, want %d", m.Received, tc.want)
			}
			t.Logf("secrets received: %d; bytes of secrets read until synced: %d KiB; heap in use after sync and GC: %d KiB (%+d KiB over before the start); synced in %v",
				m.Received, m.Bytes>>10, m.HeapAfter>>10, (m.HeapAfter-m.HeapBefore)>>10, m.Synced.Round(time.Millisecond))
		})
	}

	t.Run("namespace-scoped RBAC suffices", func(t *testing.T) {
		reader := namespacedSecretReader(t, testCtx.Ctx, cfg, ns)
		if _, err := reader.CoreV1().Secrets(metav1.NamespaceAll).List(testCtx.Ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("listing secrets cluster-wide: %v, want forbidden", err)
		}
		ctx, cancel := context.WithTimeout(testCtx.Ctx, time.Minute)
		defer cancel()
		f := informers.NewSharedInformerFactory(reader, 0)
		store, err := credentials.NewStore(ctx, reader, f, credentials.Options{SecretNamespaces: []string{ns}})
		if err != nil {
			t.Fatal(err)
		}
		f.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), store.HasSynced) {
			t.Fatal("store not synced with list and watch on secrets in its namespace only")
		}
		if got := store.CachedSecrets(); got != pullSecretsNum {
			t.Errorf("received %d secrets, want %d", got, pullSecretsNum)
		}
	})

	// A pod that names an Opaque secret is told why it is not used.
	f := informers.NewSharedInformerFactory(cs, 0)
	store, err := credentials.NewStore(testCtx.Ctx, cs, f, credentials.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(testCtx.Ctx.Done())
	if !cache.WaitForCacheSync(testCtx.Ctx.Done(), store.HasSynced) {
		t.Fatal("store not synced")
	}
	pod := st.MakePod().Namespace(ns).Name("app").Obj()
	pod.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "pull-0"}, {Name: "opaque-0"}}
	pc := store.ForPod(pod).(*credentials.PodCredentials)
	if got := pc.For("registry.example.com"); len(got) != 1 || got[0].Username != "user-0" {
		t.Errorf("credentials for registry.example.com = %+v, want pull-0's", got)
	}
	wantProblem := "secret " + ns + "/opaque-0 not found among pull secrets"
	if p := pc.Problems(); len(p) != 1 || !strings.HasPrefix(p[0], wantProblem) || !strings.Contains(p[0], "kubernetes.io/dockerconfigjson") {
		t.Errorf("Problems() = %q, want one starting %q", p, wantProblem)
	}
}

// namespacedSecretReader is a client with the chart's RBAC for
// secretNamespaces [ns]: list and watch on serviceaccounts cluster-wide, on
// secrets in ns only.
func namespacedSecretReader(t *testing.T, ctx context.Context, admin *rest.Config, ns string) clientset.Interface {
	t.Helper()
	cs := clientset.NewForConfigOrDie(admin)
	const user = "archfilter-namespaced-reader"
	meta := metav1.ObjectMeta{Name: user}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	listWatch := func(resource string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{resource}, Verbs: []string{"list", "watch"}}}
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: listWatch("serviceaccounts")}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: listWatch("secrets")}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	reader := clientset.NewForConfigOrDie(cfg)
	// The authorizer sees new bindings through its informers, a moment later.
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := reader.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s cannot list secrets in %s: %v", user, ns, err)
	}
	return reader
}

// createSecrets creates the Opaque secrets and the pull secrets, half of each
// pull secret type.
func createSecrets(t *testing.T, ctx context.Context, cs clientset.Interface, ns string) {
	t.Helper()
	start := time.Now()
	payload := []byte(strings.Repeat("k", opaqueSecretBytes))
	var g errgroup.Group
	g.SetLimit(16)
	for i := range opaqueSecrets {
		g.Go(func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("opaque-%d", i)},
				Type:       v1.SecretTypeOpaque,
				Data:       map[string][]byte{"tls.key": payload},
			}, metav1.CreateOptions{})
			return err
		})
	}
	for i := range pullSecretsNum {
		g.Go(func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, pullSecretFor(i), metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("creating secrets: %v", err)
	}
	t.Logf("created %d Opaque and %d pull secrets in %v", opaqueSecrets, pullSecretsNum, time.Since(start).Round(time.Millisecond))
}

// pullSecretFor builds pull secret i for registry.example.com, alternating
// the two pull secret types.
func pullSecretFor(i int) *v1.Secret {
	entry := map[string]string{"username": fmt.Sprintf("user-%d", i), "password": "p"}
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pull-%d", i)}}
	if i%2 == 0 {
		b, _ := json.Marshal(map[string]any{"auths": map[string]any{"registry.example.com": entry}})
		sec.Type, sec.Data = v1.SecretTypeDockerConfigJson, map[string][]byte{v1.DockerConfigJsonKey: b}
	} else {
		b, _ := json.Marshal(map[string]any{"registry.example.com": entry})
		sec.Type, sec.Data = v1.SecretTypeDockercfg, map[string][]byte{v1.DockerConfigKey: b}
	}
	return sec
}

// dropOtherSecretsData is the transform the store applied when it watched
// every secret: only pull secrets kept their data.
func dropOtherSecretsData(obj any) (any, error) {
	if sec, ok := obj.(*v1.Secret); ok {
		sec.ManagedFields = nil
		if sec.Type != v1.SecretTypeDockerConfigJson && sec.Type != v1.SecretTypeDockercfg {
			sec.Data = nil
		}
	}
	return obj, nil
}

// watcherEnv names the variant a child process of this test binary runs
// (TestSecretWatcherProcess); the other watcher variables give it the API
// server.
const (
	watcherEnv           = "ARCHFILTER_SECRET_WATCHER"
	watcherNamespacesEnv = "ARCHFILTER_SECRET_WATCHER_NAMESPACES"
	watcherHostEnv       = "ARCHFILTER_SECRET_WATCHER_HOST"
	watcherTokenEnv      = "ARCHFILTER_SECRET_WATCHER_TOKEN"
	watcherCAFileEnv     = "ARCHFILTER_SECRET_WATCHER_CA_FILE"
)

// watcherReport is what the child process measured, printed as one JSON
// line after watcherReportPrefix.
type watcherReport struct {
	Received              int64
	Bytes                 int64
	HeapBefore, HeapAfter int64
	Synced                time.Duration
}

const watcherReportPrefix = "secret-watcher-report: "

// runWatcher runs one variant in a child process of the test binary, so the
// heap it reports is the watcher's alone and not the in-process API
// server's.
func runWatcher(t *testing.T, server *rest.Config, watcher, namespaces string) watcherReport {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSecretWatcherProcess$", "-test.v")
	cmd.Env = append(os.Environ(),
		watcherEnv+"="+watcher, watcherNamespacesEnv+"="+namespaces,
		watcherHostEnv+"="+server.Host, watcherTokenEnv+"="+server.BearerToken, watcherCAFileEnv+"="+server.CAFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("secret watcher %s: %v\n%s", watcher, err, out)
	}
	for line := range strings.Lines(string(out)) {
		if _, js, ok := strings.Cut(line, watcherReportPrefix); ok {
			var r watcherReport
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				t.Fatalf("secret watcher %s: %v", watcher, err)
			}
			return r
		}
	}
	t.Fatalf("secret watcher %s printed no report:\n%s", watcher, out)
	return watcherReport{}
}

// secretWatchers start one way of watching secrets and return when it has
// synced and how many secrets it received.
var secretWatchers = map[string]func(ctx context.Context, cs clientset.Interface, namespaces []string) (synced func() bool, received func() int64, err error){
	// The Store before issue 29: the shared factory's informer on every
	// secret, the data of other secrets dropped on arrival.
	"every-secret": func(ctx context.Context, cs clientset.Interface, _ []string) (func() bool, func() int64, error) {
		var received atomic.Int64
		f := informers.NewSharedInformerFactory(cs, 0)
		inf := f.Core().V1().Secrets().Informer()
		if err := inf.SetTransform(dropOtherSecretsData); err != nil {
			return nil, nil, err
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { received.Add(1) }})
		if err != nil {
			return nil, nil, err
		}
		f.Start(ctx.Done())
		// The registration's HasSynced, not the informer's: the informer has synced when
		// its store holds the initial list, the handler only once it has been handed
		// every object of it (it runs behind, and the count is the handler's).
		return reg.HasSynced, received.Load, nil
	},
	"store": func(ctx context.Context, cs clientset.Interface, namespaces []string) (func() bool, func() int64, error) {
		f := informers.NewSharedInformerFactory(cs, 0)
		store, err := credentials.NewStore(ctx, cs, f, credentials.Options{SecretNamespaces: namespaces})
		if err != nil {
			return nil, nil, err
		}
		f.Start(ctx.Done())
		// The Store's informers hold every secret they received.
		return store.HasSynced, func() int64 { return int64(store.CachedSecrets()) }, nil
	},
}

// TestSecretWatcherProcess is the child process of runWatcher; run alone it
// skips.
func TestSecretWatcherProcess(t *testing.T) {
	start, ok := secretWatchers[os.Getenv(watcherEnv)]
	if !ok {
		t.Skip("run by TestCredentialsReceiveOnlyPullSecrets")
	}
	var namespaces []string
	if ns := os.Getenv(watcherNamespacesEnv); ns != "" {
		namespaces = strings.Split(ns, ",")
	}
	wire := &secretBytes{}
	cfg := &rest.Config{Host: os.Getenv(watcherHostEnv), BearerToken: os.Getenv(watcherTokenEnv)}
	cfg.CAFile = os.Getenv(watcherCAFileEnv)
	cfg.Wrap(wire.wrap)
	cs := clientset.NewForConfigOrDie(cfg)

	r := watcherReport{HeapBefore: heapInUse()}
	began := time.Now()
	synced, received, err := start(t.Context(), cs, namespaces)
	if err != nil {
		t.Fatal(err)
	}
	if !cache.WaitForCacheSync(t.Context().Done(), synced) {
		t.Fatal("informers did not sync")
	}
	r.Synced, r.Bytes, r.Received = time.Since(began), wire.n.Load(), received()
	r.HeapAfter = heapInUse()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(watcherReportPrefix + string(b))
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// secretBytes counts the response bytes of requests for secrets.
type secretBytes struct{ n atomic.Int64 }

func (s *secretBytes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/secrets") {
			resp.Body = &countingBody{ReadCloser: resp.Body, n: &s.n}
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

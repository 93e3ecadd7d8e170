package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
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
// arrival) is measured beside it. Objects received are asserted; the bytes
// read and the heap are logged for docs/benchmarks.md, not asserted.
func TestCredentialsReceiveOnlyPullSecrets(t *testing.T) {
	testCtx := testutils.InitTestAPIServer(t, "secrets", nil)
	ns := testCtx.NS.Name
	wire := &secretBytes{}
	cfg := rest.CopyConfig(testCtx.KubeConfig)
	cfg.QPS = -1 // creating 10 000 secrets at the default 5/s would take half an hour
	cfg.Wrap(wire.wrap)
	cs := clientset.NewForConfigOrDie(cfg)
	createSecrets(t, testCtx.Ctx, cs, ns)
	// No controller-manager runs to create it.
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(testCtx.Ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("every secret (before)", func(t *testing.T) {
		m := measure(t, wire, func(ctx context.Context) informerRun {
			var received atomic.Int64
			f := informers.NewSharedInformerFactory(cs, 0)
			inf := f.Core().V1().Secrets().Informer()
			if err := inf.SetTransform(dropOtherSecretsData); err != nil {
				t.Fatal(err)
			}
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { received.Add(1) }}); err != nil {
				t.Fatal(err)
			}
			f.Start(ctx.Done())
			return informerRun{synced: inf.HasSynced, received: received.Load}
		})
		if want := int64(opaqueSecrets + pullSecretsNum); m.received < want {
			t.Errorf("received %d secrets, want at least %d", m.received, want)
		}
		m.log(t)
	})

	for _, tc := range []struct {
		name       string
		namespaces []string
		want       int
	}{
		{name: "pull secrets (after)", want: pullSecretsNum},
		{name: "pull secrets of the pod's namespace", namespaces: []string{ns}, want: pullSecretsNum},
		{name: "pull secrets of another namespace", namespaces: []string{"elsewhere"}, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := measure(t, wire, func(ctx context.Context) informerRun {
				f := informers.NewSharedInformerFactory(cs, 0)
				store, err := credentials.NewStore(ctx, cs, f, credentials.Options{SecretNamespaces: tc.namespaces})
				if err != nil {
					t.Fatal(err)
				}
				f.Start(ctx.Done())
				// The Store's informers hold every secret they received.
				return informerRun{synced: store.HasSynced, received: func() int64 { return int64(store.CachedSecrets()) }}
			})
			if m.received != int64(tc.want) {
				t.Errorf("received %d secrets, want %d", m.received, tc.want)
			}
			m.log(t)
		})
	}

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

// measurement is one way of watching secrets: the bytes of secrets read
// from the API server until synced, and the heap its informers hold.
type measurement struct {
	received int64
	bytes    int64
	synced   time.Duration
	// heapGrowth is the heap in use after sync less before the start;
	// heapFreed is the heap in use after sync less after the informers
	// stopped and were collected. The heap is the whole process's (the API
	// server runs in it too), so the two bracket the informers' share.
	heapGrowth, heapFreed int64
}

func (m measurement) log(t *testing.T) {
	t.Logf("secrets received: %d; bytes of secrets read until synced: %d KiB; heap in use after sync and GC: %+d KiB over before the start, %+d KiB over after the stop; synced in %v",
		m.received, m.bytes>>10, m.heapGrowth>>10, m.heapFreed>>10, m.synced.Round(time.Millisecond))
}

// informerRun is what measure needs of the informers a variant started.
type informerRun struct {
	synced   func() bool
	received func() int64
}

// measure runs start's informers until they sync, measures them, stops them
// and waits for their goroutines to end, so their caches can be collected.
func measure(t *testing.T, wire *secretBytes, start func(ctx context.Context) informerRun) measurement {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	goroutines := runtime.NumGoroutine()
	before := heapInUse()
	wire.n.Store(0)
	began := time.Now()
	run := start(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), run.synced) {
		t.Fatal("informers did not sync")
	}
	m := measurement{synced: time.Since(began), bytes: wire.n.Load(), received: run.received()}
	during := heapInUse()
	m.heapGrowth = int64(during) - int64(before)
	cancel()
	run = informerRun{}
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return runtime.NumGoroutine() <= goroutines, nil
	})
	if err != nil {
		t.Logf("informer goroutines still running after the stop: %d, %d before the start", runtime.NumGoroutine(), goroutines)
	}
	m.heapFreed = int64(during) - int64(heapInUse())
	return m
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
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

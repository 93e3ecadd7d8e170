package app

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/internal/placement/webhook"
)

const testConfigName = "archfilter-placement"

func serviceRegistration() webhook.Registration {
	return webhook.Registration{Name: testConfigName,
		Service: &admissionregistrationv1.ServiceReference{Namespace: "kube-system", Name: "archfilter-placement", Port: ptr.To[int32](443)}}
}

func slice(name, service string, ready ...*bool) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system",
		Labels: map[string]string{discoveryv1.LabelServiceName: service}}, AddressType: discoveryv1.AddressTypeIPv4}
	for _, r := range ready {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: r}})
	}
	return s
}

// TestWebhookReachService: registered by Service, a replacement counts as
// placed once the configuration has its CA bundle and the Service a ready
// endpoint; pods of an ArchFilter scheduler always.
func TestWebhookReachService(t *testing.T) {
	reg := serviceRegistration()
	withCA := reg.Configuration([]byte("ca"))
	noCA := reg.Configuration(nil)
	other := reg.Configuration([]byte("ca"))
	other.Webhooks[0].Name = "other.example.com"
	stock := st.MakePod().Namespace("shop").Name("api").SchedulerName(v1.DefaultSchedulerName).Obj()
	own := st.MakePod().Namespace("shop").Name("batch").SchedulerName("archfilter-scheduler").Obj()
	const prefix = "the placement webhook does not gate pods yet ("
	const suffix = "): a replacement would be admitted ungated and placed blind"
	for _, tc := range []struct {
		name    string
		config  runtime.Object
		slices  []*discoveryv1.EndpointSlice
		pod     *v1.Pod
		wantOK  bool
		wantWhy string
	}{
		{name: "no configuration", pod: stock, slices: []*discoveryv1.EndpointSlice{slice("a", "archfilter-placement", nil)},
			wantWhy: "MutatingWebhookConfiguration archfilter-placement does not exist"},
		{name: "no CA bundle yet", config: noCA, pod: stock, slices: []*discoveryv1.EndpointSlice{slice("a", "archfilter-placement", nil)},
			wantWhy: "MutatingWebhookConfiguration archfilter-placement has no CA bundle"},
		{name: "another webhook", config: other, pod: stock, slices: []*discoveryv1.EndpointSlice{slice("a", "archfilter-placement", nil)},
			wantWhy: "MutatingWebhookConfiguration archfilter-placement has no webhook placement.archfilter.io"},
		{name: "no endpoint", config: withCA, pod: stock,
			wantWhy: "Service kube-system/archfilter-placement has no ready endpoint"},
		{name: "endpoints not ready", config: withCA, pod: stock, slices: []*discoveryv1.EndpointSlice{slice("a", "archfilter-placement", ptr.To(false), ptr.To(false))},
			wantWhy: "Service kube-system/archfilter-placement has no ready endpoint"},
		{name: "another Service's endpoint is ready", config: withCA, pod: stock,
			slices:  []*discoveryv1.EndpointSlice{slice("a", "archfilter-placement", ptr.To(false)), slice("b", "other", ptr.To(true))},
			wantWhy: "Service kube-system/archfilter-placement has no ready endpoint"},
		{name: "a ready endpoint", config: withCA, pod: stock, wantOK: true,
			slices: []*discoveryv1.EndpointSlice{slice("a", "archfilter-placement", ptr.To(false)), slice("b", "archfilter-placement", ptr.To(true))}},
		{name: "ready unset counts as ready", config: withCA, pod: stock, wantOK: true,
			slices: []*discoveryv1.EndpointSlice{slice("a", "archfilter-placement", nil)}},
		{name: "a pod of an ArchFilter scheduler, no webhook", pod: own, wantOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			var objs []runtime.Object
			if tc.config != nil {
				objs = append(objs, tc.config)
			}
			w := newWebhookReach(ctx, fake.NewClientset(objs...), reg, sets.New("archfilter-scheduler"), nil)
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			for _, s := range tc.slices {
				if err := indexer.Add(s); err != nil {
					t.Fatal(err)
				}
			}
			w.slices, w.namespace, w.service = discoverylisters.NewEndpointSliceLister(indexer), "kube-system", "archfilter-placement"
			ok, why := w.placed(tc.pod)
			want := ""
			if tc.wantWhy != "" {
				want = prefix + tc.wantWhy + suffix
			}
			if ok != tc.wantOK || why != want {
				t.Errorf("placed = %v, %q; want %v, %q", ok, why, tc.wantOK, want)
			}
		})
	}
}

// TestWebhookReachURL: registered by URL (a host process), a replacement
// counts as placed only while a TLS handshake with the URL succeeds with the
// configuration's CA bundle: not while nothing listens there, nor when
// something with another certificate does.
func TestWebhookReachURL(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	// A listener that accepts and hangs up: a proxy whose backends are gone.
	closing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer closing.Close()
	go func() {
		for {
			c, err := closing.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	down := httptest.NewUnstartedServer(nil).Listener.Addr().String() // never served
	pod := st.MakePod().Namespace("shop").Name("api").SchedulerName(v1.DefaultSchedulerName).Obj()
	for _, tc := range []struct {
		name, url string
		ca        []byte
		wantOK    bool
		wantWhy   string
	}{
		{name: "serving", url: srv.URL, ca: ca, wantOK: true},
		{name: "nothing listens", url: "https://" + down, ca: ca, wantWhy: "does not answer with the webhook's certificate"},
		{name: "the connection is cut", url: "https://" + closing.Addr().String(), ca: ca, wantWhy: "does not answer with the webhook's certificate"},
		{name: "a CA bundle without a certificate", url: srv.URL, ca: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}), wantWhy: "the CA bundle holds no certificate"},
		{name: "a name the certificate lacks", url: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), ca: ca, wantWhy: "does not answer with the webhook's certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := webhook.Registration{Name: testConfigName, URL: tc.url}
			w := newWebhookReach(ctx, fake.NewClientset(reg.Configuration(tc.ca)), reg, sets.New("archfilter-scheduler"), nil)
			ok, why := w.placed(pod)
			if ok != tc.wantOK || !strings.Contains(why, tc.wantWhy) {
				t.Errorf("placed = %v, %q; want %v, containing %q", ok, why, tc.wantOK, tc.wantWhy)
			}
		})
	}
}

// TestWebhookReachReused: an answer is reused for webhookCheckTTL, then
// checked again: a webhook that starts serving is seen within it.
func TestWebhookReachReused(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	reg := serviceRegistration()
	client := fake.NewClientset()
	w := newWebhookReach(ctx, client, reg, sets.New[string](), nil)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	w.slices, w.namespace, w.service = discoverylisters.NewEndpointSliceLister(indexer), "kube-system", "archfilter-placement"
	clk := testingclock.NewFakePassiveClock(time.Now())
	w.clock = clk
	pod := st.MakePod().Namespace("shop").Name("api").Obj()
	if ok, _ := w.placed(pod); ok {
		t.Fatal("placed with no configuration")
	}
	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, reg.Configuration([]byte("ca")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := indexer.Add(slice("a", "archfilter-placement", ptr.To(true))); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(webhookCheckTTL - time.Second))
	if ok, _ := w.placed(pod); ok {
		t.Error("the answer was not reused within its TTL")
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if ok, why := w.placed(pod); !ok {
		t.Errorf("not placed after the TTL, with the webhook serving: %s", why)
	}
}

// TestArchFilterSchedulerPlaces: without the placement mode, only the pods of
// an ArchFilter scheduler have a replacement placed by their images.
func TestArchFilterSchedulerPlaces(t *testing.T) {
	placed := archFilterSchedulerPlaces(sets.New("archfilter-scheduler", "batch-scheduler"))
	type answer struct {
		OK  bool
		Why string
	}
	for _, tc := range []struct {
		name, scheduler string
		want            answer
	}{
		{name: "the archfilter scheduler", scheduler: "archfilter-scheduler", want: answer{OK: true}},
		{name: "another ArchFilter scheduler", scheduler: "batch-scheduler", want: answer{OK: true}},
		{name: "the default scheduler", scheduler: v1.DefaultSchedulerName, want: answer{Why: "its replacement would be placed by default-scheduler, which does not read images: name an archfilter scheduler or run the placement mode"}},
		{name: "no scheduler named", want: answer{Why: "its replacement would be placed by default-scheduler, which does not read images: name an archfilter scheduler or run the placement mode"}},
		{name: "another scheduler", scheduler: "volcano", want: answer{Why: "its replacement would be placed by volcano, which does not read images: name an archfilter scheduler or run the placement mode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := st.MakePod().Namespace("shop").Name("api").Obj()
			pod.Spec.SchedulerName = tc.scheduler
			var got answer
			got.OK, got.Why = placed(pod)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

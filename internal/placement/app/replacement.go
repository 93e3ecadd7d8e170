package app

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/archfilter/archfilter/internal/placement/webhook"
)

// webhookCheckTTL is how long an answer of webhookReach is reused: the watch
// asks for every misplaced pod, and a webhook that starts serving is seen
// this much later at most (the watch checks a refused pod again after 30s).
const webhookCheckTTL = 5 * time.Second

// webhookDialTimeout bounds the TLS handshake with a webhook registered by URL.
const webhookDialTimeout = 2 * time.Second

// webhookReach answers heal.Options.ReplacementPlaced in the placement mode:
// an evicted pod's replacement is placed by this mode only if the API server
// calls its webhook when the controller creates the replacement; a replacement
// admitted ungated (failurePolicy Ignore) is placed blind, maybe on the node it
// was evicted from. So eviction waits until the webhook gates pods as the API
// server calls it, judged from what the API server itself uses:
//
//   - the MutatingWebhookConfiguration this companion owns exists, with its
//     webhook and a CA bundle (without them the API server calls nothing, or
//     cannot trust what answers);
//   - registered by Service (in a cluster): the Service has a ready endpoint
//     in its EndpointSlices, which is where the API server sends the call (the
//     companion's readiness probe is the webhook's port);
//   - registered by URL (--webhook-url: a host process, maybe behind a proxy or
//     load balancer): a TLS handshake with the URL succeeds, verified with the
//     configuration's CA bundle, so something holding this companion's
//     certificate answers there.
//
// Not chosen: a dry-run pod create, which shows the gate exactly but needs
// the right to create pods in every namespace (dry run is authorised as a real
// create), a right this companion must not have; and a TLS handshake through
// the Service from inside the pod, which takes the pod network's path, not the
// API server's (a hosted control plane reaches pods through a tunnel, and
// NetworkPolicies admit the API server, not the companion).
//
// Pods that name an ArchFilter scheduler (--skip-scheduler-names) are placed by
// that scheduler whatever the webhook does: their replacements always are.
type webhookReach struct {
	ctx        context.Context
	client     kubernetes.Interface
	configName string
	schedulers sets.Set[string]
	// slices lists the EndpointSlices of the Service service in namespace;
	// nil for a webhook registered by URL.
	slices             discoverylisters.EndpointSliceLister
	namespace, service string
	clock              clock.PassiveClock

	mu      sync.Mutex
	checked time.Time
	ok      bool
	why     string
}

// newWebhookReach answers for the webhook configuration reg names; for one
// registered by Service it asks slices, a factory of EndpointSlices in the
// Service's namespace (endpointslices: list, watch there), which the caller
// starts.
func newWebhookReach(ctx context.Context, client kubernetes.Interface, reg webhook.Registration, schedulers sets.Set[string], slices informers.SharedInformerFactory) *webhookReach {
	w := &webhookReach{ctx: ctx, client: client, configName: reg.Name, schedulers: schedulers, clock: clock.RealClock{}}
	if reg.URL == "" && reg.Service != nil && slices != nil {
		w.slices = slices.Discovery().V1().EndpointSlices().Lister()
		w.namespace, w.service = reg.Service.Namespace, reg.Service.Name
	}
	return w
}

// endpointSlicesFactory is the informer factory of the EndpointSlices of
// Service name in namespace (and nothing else).
func endpointSlicesFactory(client kubernetes.Interface, namespace, name string) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.Set{discoveryv1.LabelServiceName: name}.String()
		}))
}

// placed is heal.Options.ReplacementPlaced.
func (w *webhookReach) placed(pod *v1.Pod) (bool, string) {
	if w.schedulers.Has(pod.Spec.SchedulerName) {
		return true, ""
	}
	if ok, why := w.serving(); !ok {
		return false, "the placement webhook does not gate pods yet (" + why + "): a replacement would be admitted ungated and placed blind"
	}
	return true, ""
}

// serving is check's answer, reused for webhookCheckTTL.
func (w *webhookReach) serving() (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.checked.IsZero() && w.clock.Since(w.checked) < webhookCheckTTL {
		return w.ok, w.why
	}
	ok, why := w.check(w.ctx)
	if ok != w.ok || w.checked.IsZero() {
		klog.FromContext(w.ctx).V(2).Info("Placement webhook as the API server reaches it", "serving", ok, "why", why)
	}
	w.checked, w.ok, w.why = w.clock.Now(), ok, why
	return ok, why
}

// check looks at the configuration, then at the path the API server takes.
func (w *webhookReach) check(ctx context.Context) (bool, string) {
	cfg, err := w.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, w.configName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, fmt.Sprintf("MutatingWebhookConfiguration %s does not exist", w.configName)
	}
	if err != nil {
		return false, fmt.Sprintf("reading MutatingWebhookConfiguration %s: %v", w.configName, err)
	}
	for _, wh := range cfg.Webhooks {
		if wh.Name != webhook.WebhookName {
			continue
		}
		cc := wh.ClientConfig
		switch {
		case len(cc.CABundle) == 0:
			return false, fmt.Sprintf("MutatingWebhookConfiguration %s has no CA bundle", w.configName)
		case cc.URL != nil:
			return tlsAnswers(ctx, *cc.URL, cc.CABundle)
		case cc.Service != nil && w.slices != nil:
			return w.endpointReady()
		}
		return false, fmt.Sprintf("MutatingWebhookConfiguration %s names neither a URL nor a Service this companion watches", w.configName)
	}
	return false, fmt.Sprintf("MutatingWebhookConfiguration %s has no webhook %s", w.configName, webhook.WebhookName)
}

// endpointReady: one of the Service's EndpointSlices has a ready endpoint (a
// nil Ready counts as ready, as the API documents).
func (w *webhookReach) endpointReady() (bool, string) {
	slices, err := w.slices.EndpointSlices(w.namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: w.service}))
	if err != nil {
		return false, fmt.Sprintf("listing the EndpointSlices of Service %s/%s: %v", w.namespace, w.service, err)
	}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				return true, ""
			}
		}
	}
	return false, fmt.Sprintf("Service %s/%s has no ready endpoint", w.namespace, w.service)
}

// tlsAnswers: a TLS handshake with rawURL's host succeeds, its certificate
// verified with caBundle for the URL's host name, as the API server verifies it.
func tlsAnswers(ctx context.Context, rawURL string, caBundle []byte) (bool, string) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false, fmt.Sprintf("webhook URL %q: %v", rawURL, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		return false, "the CA bundle holds no certificate"
	}
	d := tls.Dialer{
		NetDialer: &net.Dialer{Timeout: webhookDialTimeout},
		Config:    &tls.Config{RootCAs: pool, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12},
	}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), cmp.Or(u.Port(), "443")))
	if err != nil {
		return false, fmt.Sprintf("%s does not answer with the webhook's certificate: %v", u.Host, err)
	}
	_ = conn.Close()
	return true, ""
}

// archFilterSchedulerPlaces answers heal.Options.ReplacementPlaced without the
// placement mode (--mode=heal): nothing gates pods, so a replacement is placed
// by the scheduler its pod names, and only an ArchFilter scheduler
// (schedulers, from --skip-scheduler-names) reads its images.
func archFilterSchedulerPlaces(schedulers sets.Set[string]) func(*v1.Pod) (bool, string) {
	return func(pod *v1.Pod) (bool, string) {
		name := cmp.Or(pod.Spec.SchedulerName, v1.DefaultSchedulerName)
		if schedulers.Has(name) {
			return true, ""
		}
		return false, fmt.Sprintf("its replacement would be placed by %s, which does not read images: name an archfilter scheduler or run the placement mode", name)
	}
}

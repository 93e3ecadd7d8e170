package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/apis/config"
	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/internal/placement/certs"
	"github.com/archfilter/archfilter/internal/placement/controller"
	"github.com/archfilter/archfilter/internal/placement/heal"
	"github.com/archfilter/archfilter/internal/placement/metrics"
	"github.com/archfilter/archfilter/internal/placement/serving"
	"github.com/archfilter/archfilter/internal/placement/warnings"
	"github.com/archfilter/archfilter/internal/placement/webhook"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/policystatus"
	"github.com/archfilter/archfilter/pkg/policystore"
	"github.com/archfilter/archfilter/pkg/registryclient"
	"github.com/archfilter/archfilter/pkg/version"
)

// component names the events' source.
const component = "archfilter-placement"

// The Lease's timing: a holder renews every leaseRetryPeriod and loses it
// leaseDuration after its last renewal; the webhook reads it as often.
const (
	leaseDuration    = 15 * time.Second
	leaseRetryPeriod = 2 * time.Second
)

// certCheckInterval is how often the certificate's expiry is checked;
// externalCertCheckInterval how often a certificate issued by someone else
// (--cert-secret-external) is re-read, and externalCertWait how often it is
// tried at start until it exists.
const (
	certCheckInterval         = time.Hour
	externalCertCheckInterval = time.Minute
	externalCertWait          = 2 * time.Second
)

// stopDeploymentTimeout bounds the wait for --stop-deployment's pods to go.
const stopDeploymentTimeout = 3 * time.Minute

// namespaceGetTimeout bounds the read of a namespace the informer has not seen,
// inside the webhook's own timeout.
const namespaceGetTimeout = 2 * time.Second

// NewCommand is the archfilter-placement command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:          "archfilter-placement",
		Short:        "ArchFilter's placement mode: gate new pods, write the node affinity their images need, ungate them; or (--mode=heal) only find and evict bound pods on nodes that cannot run them",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := terminationContext(cmd.Context())
			defer stop()
			return Run(ctx, o)
		},
	}
	o.AddFlags(cmd.Flags())
	globalflag.AddGlobalFlags(cmd.Flags(), cmd.Name())
	return cmd
}

// terminationContext is ctx, done at the first SIGTERM (a rollout, a drain,
// helm upgrade) or SIGINT: Run then stops gracefully, and the leader releases
// its Lease, so a successor leads at once instead of after the Lease's
// duration, during which the webhook admits new pods ungated. A second
// signal ends the process at once.
func terminationContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-ctx.Done()
		stop() // the default handling again: the next signal kills
	}()
	return ctx, stop
}

// Run runs the webhook and controller (or, with --remove-gates, the
// uninstall; with --mode=heal, the watch on bound pods alone) until ctx is
// done.
func Run(ctx context.Context, o *Options) error {
	logger := klog.FromContext(ctx)
	if err := o.Validate(); err != nil {
		return err
	}
	args, err := o.LoadArgs()
	if err != nil {
		return err
	}
	settings, err := o.settings(args)
	if err != nil {
		return err
	}
	var restConfig *rest.Config
	if o.RestConfig != nil {
		restConfig = rest.CopyConfig(o.RestConfig)
	} else if restConfig, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig); err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	restConfig.UserAgent = component
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	excluded := sets.New(args.ExcludedNamespaces...).Insert(o.Namespace)
	reg := webhook.Registration{Name: o.WebhookConfigName, WarningsName: o.WebhookConfigName + "-warnings", Warnings: o.WorkloadWarnings,
		URL: o.WebhookURL, ExcludedNamespaces: excluded, NamespaceSelector: args.NamespaceSelector,
		TimeoutSeconds: int32(o.WebhookTimeout / time.Second)}
	if o.WebhookURL == "" {
		reg.Service = &admissionregistrationv1.ServiceReference{Namespace: o.Namespace, Name: o.ServiceName, Port: ptr.To(o.ServicePort)}
	}
	metrics.Register()

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: component})

	if o.RemoveGates {
		return o.uninstall(ctx, client, reg, recorder)
	}
	if o.Mode == ModeHeal {
		return o.runHeal(ctx, client, args, settings, recorder)
	}
	metrics.MaxGatedSeconds.Set(o.MaxGated.Seconds())

	addr, err := o.listenAddress()
	if err != nil {
		return err
	}
	// Everything started below stops when Run returns, error or not.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cm, err := o.certManager(ctx, client, reg)
	if err != nil {
		return err
	}
	if o.CertSecretExternal {
		// cert-manager issues it shortly after the install: wait, saying why.
		err := wait.PollUntilContextCancel(ctx, externalCertWait, true, func(ctx context.Context) (bool, error) {
			err := cm.Ensure(ctx)
			if err != nil {
				logger.Info("Waiting for the webhook's certificate", "err", err)
			}
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for Secret %s/%s: %w", o.Namespace, o.CertSecret, err)
		}
		go cm.Run(ctx, externalCertCheckInterval)
	} else {
		if err := cm.Ensure(ctx); err != nil {
			return err
		}
		go cm.Run(ctx, certCheckInterval)
	}

	factory := informers.NewSharedInformerFactory(client, 0)
	windowsNodes := controller.NewWindowsNodesFactory(client)
	rc, err := registryclient.New(ctx, args, client, factory)
	if err != nil {
		return err
	}
	namespaces := namespaceLabels(ctx, client, factory, settings)
	policies, err := watchPolicies(ctx, restConfig, args)
	if err != nil {
		return err
	}
	var lookup decision.PolicyLookup
	if policies != nil {
		lookup = policies.store.Lookup
	}
	ctrl, err := controller.New(controller.Options{
		Client:       client,
		Informers:    factory,
		WindowsNodes: windowsNodes.Core().V1().Nodes(),
		Resolver:     rc.Resolver,
		Credentials:  rc.Credentials,
		Recorder:     recorder,
		Settings:     settings,
		Namespaces:   namespaces,
		Policies:     lookup,
		By:           component + " " + version.Version,
		MaxGated:     o.MaxGated,
		Workers:      o.Workers,
	})
	if err != nil {
		return err
	}

	run := ctrl.Run
	factories := []informers.SharedInformerFactory{factory, windowsNodes}
	if mode, _ := heal.ParseMode(o.Misplaced); mode != heal.ModeOff {
		// An eviction waits until the webhook gates the replacement (webhookReach).
		var slices informers.SharedInformerFactory
		if reg.Service != nil {
			slices = endpointSlicesFactory(client, reg.Service.Namespace, reg.Service.Name)
			factories = append(factories, slices)
		}
		reach := newWebhookReach(ctx, client, reg, settings.Schedulers, slices)
		h, err := heal.New(heal.Options{Client: client, Informers: factory, Resolver: rc.Resolver, Credentials: rc.Credentials,
			Recorder: recorder, Settings: settings, Namespaces: namespaces, Mode: mode, EvictionsPerMinute: o.EvictionsPerMinute,
			ReplacementPlaced: reach.placed, NegativeTTL: args.Cache.NegativeTTL.Duration})
		if err != nil {
			return err
		}
		run = runBoth(ctrl.Run, h.Run)
	}

	if policies != nil && o.PolicyStatus {
		r := &policystatus.Reporter{Client: policies.client, Store: policies.store, Settings: settings,
			Pods: factory.Core().V1().Pods().Lister(), NodePlatforms: nodePlatforms(factory), Namespaces: namespaces}
		run = runBoth(run, func(ctx context.Context) error { r.Run(ctx); return nil })
	}

	live := newControllerLiveness(clock.RealClock{})
	mux := http.NewServeMux()
	if o.WorkloadWarnings {
		mux.Handle(warnings.Path, &warnings.Handler{Settings: settings, Policies: lookup, Namespaces: namespaces,
			Resolver: rc.Resolver, Credentials: rc.Credentials, NodePlatforms: nodePlatforms(factory),
			Budget: warningsBudget(o.WebhookTimeout), Logger: logger.WithName("warnings")})
	}
	mux.Handle(webhook.Path, &webhook.Handler{
		Settings:          settings,
		Namespaces:        namespaces,
		Policies:          lookup,
		Logger:            logger,
		ControllerRunning: live.running,
	})
	tlsConfig, err := o.TLS.Config(cm.GetCertificate)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("webhook listener: %w", err)
	}
	// Every goroutine below sends at most once: none blocks at shutdown.
	errc := make(chan error, 4)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	if o.MetricsAddr != "" {
		msrv, serve, err := o.metricsServer(client, tlsConfig)
		if err != nil {
			_ = srv.Close()
			return err
		}
		go func() { errc <- serve() }()
		defer msrv.Close()
	}
	for _, f := range factories {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	if o.LeaderElect {
		go live.watchLease(ctx, client, o.Namespace, o.lease(), leaseDuration, leaseRetryPeriod)
		lead := live.wrap(run)
		if o.HotStandby {
			lead = hotStandby(ctx, ctrl.Warm, lead)
		}
		released, err := o.runLeading(ctx, client, recorder, lead, errc)
		if err != nil {
			return err
		}
		// The Lease is released before Run returns, so a successor takes
		// over at once rather than after the lease duration.
		defer func() { cancel(); <-released }()
	} else {
		go func() { errc <- live.wrap(run)(ctx) }()
	}
	logger.Info("Placement mode running", "webhook", addr, "webhookConfiguration", reg.Name, "maxGated", o.MaxGated, "failurePolicy", args.FailurePolicy,
		"leaderElection", o.LeaderElect, "hotStandby", o.LeaderElect && o.HotStandby)

	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	// Its own cancel: the deferred release above must cancel the run's ctx.
	shutdownCtx, cancelShutdown := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelShutdown()
	_ = srv.Shutdown(shutdownCtx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// metricsServer serves /metrics and /healthz on --metrics-addr: with
// --metrics-auth=delegated over HTTPS (tlsConfig, the webhook's), /metrics
// only to whom the API server authenticates and authorises for it; with none,
// plain HTTP (Validate allows it on loopback only).
func (o *Options) metricsServer(client kubernetes.Interface, tlsConfig *tls.Config) (*http.Server, func() error, error) {
	metricsHandler := legacyregistry.Handler()
	if o.MetricsAuth == MetricsAuthDelegated {
		d, err := serving.NewDelegated(client)
		if err != nil {
			return nil, nil, err
		}
		metricsHandler = d.Wrap(metricsHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metricsHandler)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", o.MetricsAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	if o.MetricsAuth == MetricsAuthNone {
		return srv, func() error { return srv.Serve(ln) }, nil
	}
	srv.TLSConfig = tlsConfig
	return srv, func() error { return srv.ServeTLS(ln, "", "") }, nil
}

// settings are package decision's rules from args, with this process's own
// namespace excluded and the pods of --skip-scheduler-names left to the plugin.
func (o *Options) settings(args *config.ArchFilterArgs) (*decision.Settings, error) {
	s, err := decision.NewSettings(args)
	if err != nil {
		return nil, fmt.Errorf("--args: %w", err)
	}
	s.ExcludedNamespaces = s.ExcludedNamespaces.Clone().Insert(o.Namespace)
	s.Schedulers = sets.New(o.SkipSchedulerNames...)
	return s, nil
}

// watchPolicies starts the ArchFilterPolicy store (pkg/policystore) when
// args enable policies, and returns its lookup; nil otherwise. It returns once
// the store has synced or knows why it cannot (it logs why), so that pods
// admitted afterwards are decided with the policies in force.
func watchPolicies(ctx context.Context, restConfig *rest.Config, args *config.ArchFilterArgs) (*watchedPolicies, error) {
	if !args.Policies.Enabled {
		return nil, nil
	}
	client, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("a client for %s: %w", policyv1alpha1.SchemeGroupResource, err)
	}
	store := policystore.New()
	policystore.Start(ctx, client, store, policystore.Options{})
	return &watchedPolicies{store: store, client: client}, nil
}

// warningsBudget is the registry budget of one workload's warnings: 2s, and a
// second less than the webhook's timeout, so the API server gets an answer.
func warningsBudget(timeout time.Duration) time.Duration {
	return max(100*time.Millisecond, min(warnings.DefaultBudget, timeout-time.Second))
}

// watchedPolicies are the policy store and the client that fills it.
type watchedPolicies struct {
	store  *policystore.Store
	client dynamic.Interface
}

// nodePlatforms lists the distinct platforms of the nodes in factory's node
// informer (registered here; nodes: list, watch).
func nodePlatforms(factory informers.SharedInformerFactory) func() []platform.NodePlatform {
	lister := factory.Core().V1().Nodes().Lister()
	return func() []platform.NodePlatform {
		nodes, err := lister.List(labels.Everything())
		if err != nil {
			return nil
		}
		return platform.DistinctNodePlatforms(nodes)
	}
}

// namespaceLabels reads a namespace's labels for the namespace selector: from
// an informer (started with factory; namespaces: list, watch), or, for a
// namespace it has not seen yet (created just before its first pod), from the
// apiserver. Nil without a namespace selector: nothing asks then.
func namespaceLabels(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory, s *decision.Settings) decision.NamespaceLabels {
	if s.NamespaceSelector == nil {
		return nil
	}
	lister := factory.Core().V1().Namespaces().Lister()
	return func(name string) (labels.Set, bool) {
		if ns, err := lister.Get(name); err == nil {
			return ns.Labels, true
		}
		gctx, cancel := context.WithTimeout(ctx, namespaceGetTimeout)
		defer cancel()
		ns, err := client.CoreV1().Namespaces().Get(gctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, false
		}
		return ns.Labels, true
	}
}

// certManager keeps the certificate in --cert-secret, or in memory when the
// flag is empty or, for a host process (--webhook-url), --namespace does not
// exist.
func (o *Options) certManager(ctx context.Context, client kubernetes.Interface, reg webhook.Registration) (*certs.Manager, error) {
	opts := certs.Options{
		Client:     client,
		Namespace:  o.Namespace,
		SecretName: o.CertSecret,
		Validity:   o.CertValidity,
		External:   o.CertSecretExternal,
		OnCABundle: func(ctx context.Context, bundle []byte) error { return reg.Apply(ctx, client, bundle) },
	}
	if o.WebhookURL != "" {
		u, err := o.webhookURL()
		if err != nil {
			return nil, err
		}
		if ip := net.ParseIP(u.Hostname()); ip != nil {
			opts.IPs = []net.IP{ip}
		} else {
			opts.DNSNames = []string{u.Hostname()}
		}
		if _, err := client.CoreV1().Namespaces().Get(ctx, o.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Info("Namespace does not exist: the webhook certificate is kept in memory", "namespace", o.Namespace)
			opts.SecretName = ""
		}
	} else {
		svc := o.ServiceName + "." + o.Namespace
		opts.DNSNames = []string{svc + ".svc", svc + ".svc.cluster.local", svc, o.ServiceName}
	}
	return certs.New(opts)
}

// uninstall stops the companion's Deployment when asked (--stop-deployment:
// nothing running re-creates the webhook configuration then), deletes the
// webhook configuration, so no new pod is gated, then removes the gate from
// every pod, repeating until a pass finds none (pods admitted while the
// deletion propagated), and last, with --stop-deployment (an installer's
// uninstall, Helm's hook), deletes what the companion created at run time:
// its Lease and the certificate Secret it wrote. Every failure is returned.
func (o *Options) uninstall(ctx context.Context, client kubernetes.Interface, reg webhook.Registration, recorder record.EventRecorder) error {
	logger := klog.FromContext(ctx)
	if o.StopDeployment != "" {
		if err := stopDeployment(ctx, client, o.Namespace, o.StopDeployment); err != nil {
			return err
		}
	}
	if err := reg.Delete(ctx, client); err != nil {
		return err
	}
	total := 0
	for pass := 0; pass < 5; pass++ {
		n, err := controller.RemoveGates(ctx, client, recorder)
		total += n
		if err != nil {
			return err
		}
		if n == 0 && pass > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if o.StopDeployment != "" {
		if err := o.deleteRunState(ctx, client); err != nil {
			return err
		}
	}
	logger.Info("Placement mode uninstalled", "webhookConfiguration", reg.Name, "podsReleased", total)
	return nil
}

// stopDeployment scales the Deployment to zero and waits until none of its
// pods is left.
func stopDeployment(ctx context.Context, client kubernetes.Interface, namespace, name string) error {
	logger := klog.FromContext(ctx)
	deployments := client.AppsV1().Deployments(namespace)
	d, err := deployments.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		logger.Info("Deployment to stop does not exist", "deployment", klog.KRef(namespace, name))
		return nil
	}
	if err != nil {
		return fmt.Errorf("--stop-deployment: reading Deployment %s/%s: %w", namespace, name, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("--stop-deployment: Deployment %s/%s: %w", namespace, name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
		if err != nil || scale.Spec.Replicas == 0 {
			return err
		}
		scale.Spec.Replicas = 0
		_, err = deployments.UpdateScale(ctx, name, scale, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("--stop-deployment: scaling Deployment %s/%s to zero: %w", namespace, name, err)
	}
	logger.Info("Scaled to zero, waiting for its pods to go", "deployment", klog.KRef(namespace, name))
	var left int
	err = wait.PollUntilContextTimeout(ctx, time.Second, stopDeploymentTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return false, err
		}
		left = len(pods.Items)
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("--stop-deployment: %d pod(s) of Deployment %s/%s still there: %w", left, namespace, name, err)
	}
	return nil
}

// deleteRunState deletes the Lease (--lease-name) and the certificate Secret
// the companion created (one it wrote carries its managed-by label; an
// external one is its issuer's), missing ones being no error.
func (o *Options) deleteRunState(ctx context.Context, client kubernetes.Interface) error {
	err := client.CoordinationV1().Leases(o.Namespace).Delete(ctx, o.lease(), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Lease %s/%s: %w", o.Namespace, o.lease(), err)
	}
	if o.CertSecret == "" || o.CertSecretExternal {
		return nil
	}
	secret, err := client.CoreV1().Secrets(o.Namespace).Get(ctx, o.CertSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", o.Namespace, o.CertSecret, err)
	}
	if secret.Labels[certs.ManagedByLabel] != certs.ManagedBy {
		return nil
	}
	err = client.CoreV1().Secrets(o.Namespace).Delete(ctx, o.CertSecret, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s/%s: %w", o.Namespace, o.CertSecret, err)
	}
	return nil
}

// runLeading runs the controller while this replica holds the Lease; a
// replica that loses it exits (errc), to be restarted as a follower.
func (o *Options) runLeading(ctx context.Context, client kubernetes.Interface, recorder record.EventRecorder, run func(context.Context) error, errc chan<- error) (<-chan struct{}, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leader election identity: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.Namespace, o.lease(),
		client.CoreV1(), client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID()), EventRecorder: recorder})
	if err != nil {
		return nil, fmt.Errorf("leader election lock %s/%s: %w", o.Namespace, o.lease(), err)
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   leaseDuration,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     leaseRetryPeriod,
		ReleaseOnCancel: true,
		Name:            o.lease(),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { errc <- run(ctx) },
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					errc <- fmt.Errorf("lost the Lease %s/%s", o.Namespace, o.lease())
				}
			},
		},
	})
	if err != nil {
		return nil, err
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		le.Run(ctx)
	}()
	return released, nil
}

// hotStandby runs warm (the controller's Warm: a standby resolving the images
// of gated pods, writing nothing) from now until this replica leads, and then
// lead: the controller's resolutions are cache hits for every pod the standby
// saw. warm is waited for before lead starts, so the two never run together.
func hotStandby(ctx context.Context, warm, lead func(context.Context) error) func(context.Context) error {
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := warm(wctx); err != nil && wctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Standby: not resolving gated pods' images ahead of leading")
		}
	}()
	return func(ctx context.Context) error {
		stop()
		<-done
		return lead(ctx)
	}
}

// runHeal is --mode=heal: the watch on bound pods alone (--misplaced report or
// evict), with leader election, metrics and health, and nothing of the
// placement mode: no webhook server, no webhook configuration (one left by a
// placement install is not touched: it is that install's), no certificate
// Secret, no gated pods' controller. --metrics-auth=delegated serves HTTPS
// with a self-signed certificate kept in memory.
func (o *Options) runHeal(ctx context.Context, client kubernetes.Interface, args *config.ArchFilterArgs, settings *decision.Settings, recorder record.EventRecorder) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	rc, err := registryclient.New(ctx, args, client, factory)
	if err != nil {
		return err
	}
	mode, _ := heal.ParseMode(o.Misplaced)
	h, err := heal.New(heal.Options{Client: client, Informers: factory, Resolver: rc.Resolver, Credentials: rc.Credentials,
		Recorder: recorder, Settings: settings, Namespaces: namespaceLabels(ctx, client, factory, settings), Mode: mode, EvictionsPerMinute: o.EvictionsPerMinute,
		// No webhook: only an ArchFilter scheduler places a replacement by its images.
		ReplacementPlaced: archFilterSchedulerPlaces(settings.Schedulers), NegativeTTL: args.Cache.NegativeTTL.Duration})
	if err != nil {
		return err
	}
	errc := make(chan error, 3)
	if o.MetricsAddr != "" {
		var tlsConfig *tls.Config
		if o.MetricsAuth == MetricsAuthDelegated {
			if tlsConfig, err = o.metricsCertificate(ctx); err != nil {
				return err
			}
		}
		msrv, serve, err := o.metricsServer(client, tlsConfig)
		if err != nil {
			return err
		}
		go func() { errc <- serve() }()
		defer msrv.Close()
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if o.LeaderElect {
		released, err := o.runLeading(ctx, client, recorder, h.Run, errc)
		if err != nil {
			return err
		}
		defer func() { cancel(); <-released }()
	} else {
		go func() { errc <- h.Run(ctx) }()
	}
	logger.Info("Heal mode running: watching bound pods, no webhook, no gate", "misplaced", string(mode), "leaderElection", o.LeaderElect, "lease", klog.KRef(o.Namespace, o.lease()))
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// metricsCertificate is the TLS configuration of the heal mode's metrics
// listener: a self-signed CA and serving certificate for the Service's names,
// in memory only (as kube-scheduler's secure port without a certificate),
// renewed as the webhook's is. Scrapers skip verification, or pin nothing.
func (o *Options) metricsCertificate(ctx context.Context) (*tls.Config, error) {
	svc := o.ServiceName + "." + o.Namespace
	cm, err := certs.New(certs.Options{
		DNSNames: []string{svc + ".svc", svc + ".svc.cluster.local", svc, o.ServiceName, "localhost"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1)},
		Validity: o.CertValidity,
	})
	if err != nil {
		return nil, err
	}
	if err := cm.Ensure(ctx); err != nil {
		return nil, err
	}
	go cm.Run(ctx, certCheckInterval)
	return o.TLS.Config(cm.GetCertificate)
}

// runBoth runs the placement controller and the watch on bound pods together,
// while leading: it returns when both have, with the first error; an error of
// one stops the other.
func runBoth(ctrl, watch func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errs := make(chan error, 2)
		for _, run := range []func(context.Context) error{ctrl, watch} {
			go func() {
				err := run(ctx)
				cancel()
				errs <- err
			}()
		}
		return errors.Join(<-errs, <-errs)
	}
}

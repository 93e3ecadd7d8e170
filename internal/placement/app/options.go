// Package app is the archfilter-placement command: flags, configuration,
// and the wiring of webhook, certificates and controller into one process.
package app

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/apis/config/argsfile"
	"github.com/archfilter/archfilter/internal/placement/heal"
	"github.com/archfilter/archfilter/internal/placement/serving"
	"github.com/archfilter/archfilter/pkg/decision"
)

// Options are the command's flags.
type Options struct {
	Kubeconfig         string
	ArgsFile           string
	InsecureRegistries []string
	Namespace          string
	WebhookURL         string
	ServiceName        string
	ServicePort        int32
	Listen             string
	WebhookConfigName  string
	CertSecret         string
	CertSecretExternal bool
	CertValidity       time.Duration
	WebhookTimeout     time.Duration
	MaxGated           time.Duration
	Workers            int
	MetricsAddr        string
	MetricsAuth        string
	TLS                serving.TLSOptions
	SkipSchedulerNames []string
	RemoveGates        bool
	StopDeployment     string
	LeaderElect        bool
	// LeaseName is --lease-name; empty means the mode's own (LeaseNameFor).
	LeaseName string
	// HotStandby is --hot-standby: with LeaderElect, a replica that does not
	// hold the Lease resolves the images of gated pods, writing nothing.
	HotStandby bool
	// PolicyStatus is --policy-status: the leader writes ArchFilterPolicy
	// objects' status (pkg/policystatus).
	PolicyStatus bool
	// WorkloadWarnings is --workload-warnings (package warnings).
	WorkloadWarnings bool
	// Mode is --mode: ModePlacement or ModeHeal.
	Mode string
	// Misplaced is --misplaced (off, report, evict), EvictionsPerMinute its rate limit.
	Misplaced          string
	EvictionsPerMinute float64

	// RestConfig, when set, is used instead of --kubeconfig (tests).
	RestConfig *rest.Config
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "archfilter-system"
	}
	return &Options{
		Namespace:          ns,
		ServiceName:        "archfilter-placement",
		ServicePort:        443,
		WebhookConfigName:  "archfilter-placement",
		CertSecret:         "archfilter-placement-tls",
		CertValidity:       365 * 24 * time.Hour,
		WebhookTimeout:     5 * time.Second,
		MaxGated:           2 * time.Minute,
		Workers:            4,
		SkipSchedulerNames: []string{"archfilter-scheduler"},
		Mode:               ModePlacement,
		HotStandby:         true,
		PolicyStatus:       true,
		WorkloadWarnings:   true,
		Misplaced:          string(heal.ModeOff),
		EvictionsPerMinute: 2,
		MetricsAuth:        MetricsAuthDelegated,
		TLS:                serving.NewTLSOptions(),
	}
}

// The values of --mode.
const (
	// ModePlacement runs the webhook that gates new pods and the controller
	// that places and ungates them (and, with --misplaced, the watch on bound
	// pods).
	ModePlacement = "placement"
	// ModeHeal runs the watch on bound pods alone (--misplaced report or
	// evict): no webhook, no webhook configuration, no certificate Secret, no
	// gate. For clusters whose pods are placed by the archfilter scheduler.
	ModeHeal = "heal"
)

// LeaseNameFor is the Lease a mode elects its leader with by default: each
// mode its own, so that a heal-only companion and a placement companion can
// run in one namespace without one's leader keeping the other's from running.
func LeaseNameFor(mode string) string {
	if mode == ModeHeal {
		return "archfilter-heal"
	}
	return "archfilter-placement"
}

// lease is --lease-name, or the mode's default.
func (o *Options) lease() string {
	return cmp.Or(o.LeaseName, LeaseNameFor(o.Mode))
}

// The values of --metrics-auth.
const (
	// MetricsAuthDelegated serves /metrics over HTTPS to whom the API server
	// authenticates (TokenReview) and authorises (SubjectAccessReview).
	MetricsAuthDelegated = "delegated"
	// MetricsAuthNone serves /metrics in plain HTTP to anyone who can connect:
	// only on a loopback address.
	MetricsAuthNone = "none"
)

// AddFlags registers the flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Mode, "mode", o.Mode, "placement: the webhook gates new pods and the controller writes their node affinity and ungates them (and, with --misplaced, bound pods are watched); heal: only the watch on bound pods, which needs --misplaced=report or evict: no webhook, no webhook configuration, no certificate, no gate (beside the archfilter scheduler)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the cluster; empty means in-cluster")
	fs.StringVar(&o.ArgsFile, "args", o.ArgsFile, "file holding ArchFilterArgs (apiVersion kubescheduler.config.k8s.io/v1, kind ArchFilterArgs); empty means the plugin's defaults")
	fs.StringSliceVar(&o.InsecureRegistries, "insecure-registries", o.InsecureRegistries, "registry hosts reached over plain HTTP (added to the args' registries with insecure: true)")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace of the certificate Secret and the webhook Service; never gated")
	fs.StringVar(&o.WebhookURL, "webhook-url", o.WebhookURL, "https://host:port the apiserver calls the webhook at (local runs); empty registers the webhook by Service")
	fs.StringVar(&o.ServiceName, "service-name", o.ServiceName, "Service fronting the webhook, in --namespace")
	fs.Int32Var(&o.ServicePort, "service-port", o.ServicePort, "port of --service-name")
	fs.StringVar(&o.Listen, "listen", o.Listen, "address the webhook serves TLS on; default :9443, or with --webhook-url its host:port (set it when --webhook-url is a proxy or load balancer in front of several replicas)")
	fs.StringVar(&o.WebhookConfigName, "webhook-config-name", o.WebhookConfigName, "the MutatingWebhookConfiguration this process creates and owns")
	fs.StringVar(&o.CertSecret, "cert-secret", o.CertSecret, "Secret in --namespace holding the CA and serving certificate; empty keeps them in memory")
	fs.BoolVar(&o.CertSecretExternal, "cert-secret-external", o.CertSecretExternal, "--cert-secret is issued by someone else (cert-manager): read its tls.crt, tls.key and ca.crt, publish ca.crt as the webhook's CA bundle, never write it; re-read every minute")
	fs.DurationVar(&o.CertValidity, "cert-validity", o.CertValidity, "serving certificate lifetime; renewed when a third is left")
	fs.DurationVar(&o.WebhookTimeout, "webhook-timeout", o.WebhookTimeout, "how long the apiserver waits for the webhook (whole seconds, 1s to 30s); past it the pod is created ungated")
	fs.DurationVar(&o.MaxGated, "max-gated", o.MaxGated, "longest a pod keeps the gate, counted from its creation")
	fs.IntVar(&o.Workers, "workers", o.Workers, "pods handled in parallel")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "address for /metrics and /healthz; empty disables")
	fs.StringVar(&o.MetricsAuth, "metrics-auth", o.MetricsAuth, "delegated: /metrics over HTTPS (the webhook's certificate and TLS settings), for bearer tokens the API server authenticates (TokenReview) and authorises for GET /metrics (SubjectAccessReview); /healthz stays anonymous. none: plain HTTP without authentication, only on a loopback --metrics-addr")
	o.TLS.AddFlags(fs)
	fs.StringSliceVar(&o.SkipSchedulerNames, "skip-scheduler-names", o.SkipSchedulerNames, "pods naming one of these schedulers are not gated (they run ArchFilter already)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "run the controller (and the watch on bound pods) only in the replica holding the Lease --lease-name in --namespace (every replica serves the webhook)")
	fs.StringVar(&o.LeaseName, "lease-name", o.LeaseName, "the Lease --leader-elect uses; empty means archfilter-placement, or archfilter-heal with --mode=heal")
	fs.BoolVar(&o.HotStandby, "hot-standby", o.HotStandby, "with --leader-elect: a replica that does not hold the Lease resolves the images of gated pods as the leader does (into its own cache; it writes nothing to the cluster), so that it takes over without asking the registries; false: a standby only serves the webhook")
	fs.BoolVar(&o.WorkloadWarnings, "workload-warnings", o.WorkloadWarnings, "register a validating webhook (the ValidatingWebhookConfiguration <webhook-config-name>-warnings) that warns, never denies, when a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob is applied whose pod template's images run on no platform of the cluster's nodes or on none its ArchFilterPolicy allows; false deletes it")
	fs.BoolVar(&o.PolicyStatus, "policy-status", o.PolicyStatus, "the leader writes the status of ArchFilterPolicy objects (whether each is in force, overlaps another, oversteps ArchFilterArgs.policies, has an effect); set false when an archfilter scheduler runs too, which writes them (the chart does)")
	fs.StringVar(&o.Misplaced, "misplaced", o.Misplaced, "bound pods on a node that cannot run them (the node's platform is not among their images', or exec format error): off; report (an ArchFilterMisplaced event on the pod and the archfilter_placement_misplaced_pods gauge); evict (and evict those a controller other than a DaemonSet recreates, through the Eviction API, so that they are placed again); run by the leader only")
	fs.Float64Var(&o.EvictionsPerMinute, "misplaced-evictions-per-minute", o.EvictionsPerMinute, "with --misplaced=evict: the most pods evicted per minute (one at a time)")
	fs.BoolVar(&o.RemoveGates, "remove-gates", o.RemoveGates, "uninstall: delete the webhook configuration, remove the gate from every pod, exit")
	fs.StringVar(&o.StopDeployment, "stop-deployment", o.StopDeployment, "with --remove-gates (an installer's uninstall): first scale this Deployment in --namespace (the companion's own) to zero and wait until its pods are gone, so that no replica re-creates the webhook configuration; last delete the Lease --lease-name and the --cert-secret the companion wrote")
}

// Validate checks the flags that do not depend on the cluster.
func (o *Options) Validate() error {
	switch o.Mode {
	case ModePlacement:
	case ModeHeal:
		if err := o.validateHeal(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--mode %q: want %s or %s", o.Mode, ModePlacement, ModeHeal)
	}
	if o.WebhookTimeout < time.Second || o.WebhookTimeout > 30*time.Second || o.WebhookTimeout%time.Second != 0 {
		return fmt.Errorf("--webhook-timeout %v: want whole seconds from 1s to 30s (the apiserver's range)", o.WebhookTimeout)
	}
	if o.CertSecretExternal && o.CertSecret == "" {
		return fmt.Errorf("--cert-secret-external needs --cert-secret (the Secret cert-manager writes)")
	}
	mode, err := heal.ParseMode(o.Misplaced)
	if err != nil {
		return err
	}
	if mode == heal.ModeEvict && o.EvictionsPerMinute <= 0 {
		return fmt.Errorf("--misplaced-evictions-per-minute %v: must be positive with --misplaced=evict", o.EvictionsPerMinute)
	}
	if o.StopDeployment != "" && !o.RemoveGates {
		return fmt.Errorf("--stop-deployment %s: only with --remove-gates", o.StopDeployment)
	}
	if _, err := o.TLS.Config(nil); err != nil {
		return err
	}
	switch o.MetricsAuth {
	case MetricsAuthDelegated:
	case MetricsAuthNone:
		if o.MetricsAddr != "" && !loopback(o.MetricsAddr) {
			return fmt.Errorf("--metrics-auth=none with --metrics-addr %s: unauthenticated metrics only on a loopback address (127.0.0.1:port, [::1]:port, localhost:port)", o.MetricsAddr)
		}
	default:
		return fmt.Errorf("--metrics-auth %q: want %s or %s", o.MetricsAuth, MetricsAuthDelegated, MetricsAuthNone)
	}
	return nil
}

// validateHeal refuses, with --mode=heal, what only the placement mode does.
func (o *Options) validateHeal() error {
	mode, err := heal.ParseMode(o.Misplaced)
	if err != nil {
		return err
	}
	if mode == heal.ModeOff {
		return fmt.Errorf("--mode=heal runs only the watch on bound pods: set --misplaced=%s or --misplaced=%s (it is %s)", heal.ModeReport, heal.ModeEvict, o.Misplaced)
	}
	for _, f := range []struct {
		flag string
		set  bool
	}{
		{"--remove-gates", o.RemoveGates},
		{"--webhook-url", o.WebhookURL != ""},
		{"--cert-secret-external", o.CertSecretExternal},
	} {
		if f.set {
			return fmt.Errorf("%s: a flag of --mode=placement; --mode=heal registers no webhook and gates no pod", f.flag)
		}
	}
	return nil
}

// loopback: addr's host is a loopback address or localhost (an empty host
// listens on every interface).
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// defaultListen is where the webhook serves in a cluster.
const defaultListen = ":9443"

// listenAddress is where the webhook serves: --listen, else the host:port of
// --webhook-url, else defaultListen.
func (o *Options) listenAddress() (string, error) {
	if o.WebhookURL == "" {
		return cmp.Or(o.Listen, defaultListen), nil
	}
	u, err := o.webhookURL()
	if err != nil {
		return "", err
	}
	return cmp.Or(o.Listen, net.JoinHostPort(u.Hostname(), u.Port())), nil
}

func (o *Options) webhookURL() (*url.URL, error) {
	u, err := url.Parse(o.WebhookURL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("--webhook-url %q: want https://host:port", o.WebhookURL)
	}
	if _, err := strconv.Atoi(u.Port()); err != nil {
		return nil, fmt.Errorf("--webhook-url %q: want an explicit port", o.WebhookURL)
	}
	return u, nil
}

// LoadArgs reads --args (or the defaults), adds --insecure-registries and
// validates the result as the plugin does; a field the placement mode cannot
// honour is refused.
func (o *Options) LoadArgs() (*config.ArchFilterArgs, error) {
	args, err := argsfile.Load("--args", o.ArgsFile, func(args *config.ArchFilterArgs) {
		for _, host := range o.InsecureRegistries {
			args.Registries = append(args.Registries, config.RegistryConfig{Host: host, Insecure: true})
		}
	})
	if err != nil {
		return nil, err
	}
	// Accepting it silently would make the mode decide unlike the plugin.
	if err := decision.RefuseSchedulerOnly(field.NewPath("args"), args, "the placement mode"); err != nil {
		return nil, fmt.Errorf("--args %s: %w", o.ArgsFile, err)
	}
	return args, nil
}

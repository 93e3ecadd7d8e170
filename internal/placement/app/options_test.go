package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/archfilter/archfilter/apis/config"
)

func TestLoadArgs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		file     string // "" : no --args
		insecure []string
		check    func(*config.ArchFilterArgs) string
		wantErr  string
	}{
		{
			name: "defaults are the plugin's",
			check: func(a *config.ArchFilterArgs) string {
				return cmp.Diff([]string{"kube-system", "kube-public", "kube-node-lease"}, a.ExcludedNamespaces) +
					cmp.Diff(config.FailurePolicyIgnore, a.FailurePolicy)
			},
		},
		{
			name:     "insecure registries are added",
			file:     "failurePolicy: Fail\nregistries:\n- host: r.example\n  mirrors: [m.example]\n",
			insecure: []string{"127.0.0.1:5000"},
			check: func(a *config.ArchFilterArgs) string {
				return cmp.Diff([]config.RegistryConfig{{Host: "r.example", Mirrors: []string{"m.example"}}, {Host: "127.0.0.1:5000", Insecure: true}}, a.Registries) +
					cmp.Diff(config.FailurePolicyFail, a.FailurePolicy)
			},
		},
		{name: "unknown field", file: "failurePolicyy: Fail\n", wantErr: "failurePolicyy"},
		{name: "invalid value names the field", file: "failurePolicy: Sometimes\n", wantErr: "args.failurePolicy"},
		{name: "a field the mode cannot honour is refused, naming its path", file: "archTaintToleration: true\n", wantErr: "args.archTaintToleration: Forbidden: the placement mode writes node affinity"},
		{
			name: "the scope fields the plugin honours are accepted",
			file: "daemonSetPolicy: Enforce\nnamespaceSelector:\n  matchLabels:\n    team: shop\n",
			check: func(a *config.ArchFilterArgs) string {
				return cmp.Diff(config.DaemonSetPolicyEnforce, a.DaemonSetPolicy) + cmp.Diff(map[string]string{"team": "shop"}, a.NamespaceSelector.MatchLabels)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			o.InsecureRegistries = tc.insecure
			if tc.file != "" {
				o.ArgsFile = filepath.Join(t.TempDir(), "args.yaml")
				if err := os.WriteFile(o.ArgsFile, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: ArchFilterArgs\n"+tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args, err := o.LoadArgs()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LoadArgs error = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := tc.check(args); diff != "" {
				t.Errorf("args (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWebhookURLAndListen(t *testing.T) {
	for _, tc := range []struct {
		url, listen, want, wantErr string
	}{
		{want: ":9443"},
		{listen: "127.0.0.1:9000", want: "127.0.0.1:9000"},
		{url: "https://127.0.0.1:8443", want: "127.0.0.1:8443"},
		// Behind a proxy: the URL is the proxy's, the replica listens elsewhere.
		{url: "https://127.0.0.1:8443", listen: "127.0.0.1:9001", want: "127.0.0.1:9001"},
		{url: "http://127.0.0.1:8443", wantErr: "want https"},
		{url: "https://127.0.0.1", wantErr: "explicit port"},
		{url: "https://127.0.0.1:8443/path", wantErr: "want https"},
	} {
		o := NewOptions()
		o.WebhookURL, o.Listen = tc.url, tc.listen
		got, err := o.listenAddress()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("--webhook-url %q: error %v, want %q", tc.url, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("--webhook-url %q --listen %q: %q, %v; want %q", tc.url, tc.listen, got, err, tc.want)
		}
	}
}

func TestCommandFlags(t *testing.T) {
	cmd := NewCommand()
	if err := cmd.ParseFlags([]string{"--kubeconfig", "/k", "--webhook-url", "https://127.0.0.1:1", "--insecure-registries", "a:1,b:2", "--cert-secret=", "--remove-gates",
		"--webhook-timeout=12s", "--cert-secret-external", "--stop-deployment=archfilter-placement",
		"--tls-min-version=VersionTLS13", "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "--metrics-auth=none",
		"--mode=heal", "--hot-standby=false", "--misplaced=report", "--misplaced=evict"}); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"kubeconfig": "/k", "webhook-url": "https://127.0.0.1:1", "insecure-registries": "[a:1,b:2]", "cert-secret": "", "remove-gates": "true",
		"webhook-timeout": "12s", "cert-secret-external": "true", "stop-deployment": "archfilter-placement",
		"tls-min-version": "VersionTLS13", "tls-cipher-suites": "[TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]", "metrics-auth": "none",
		// A flag given twice: the last wins (the kustomize components rely on it).
		"mode": "heal", "hot-standby": "false", "misplaced": "evict"} {
		if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     func(*Options)
		wantErr string
	}{
		{name: "defaults"},
		{name: "a timeout of 30s", set: func(o *Options) { o.WebhookTimeout = 30 * time.Second }},
		{name: "timeout under a second", set: func(o *Options) { o.WebhookTimeout = 500 * time.Millisecond }, wantErr: "--webhook-timeout"},
		{name: "timeout over 30s", set: func(o *Options) { o.WebhookTimeout = 31 * time.Second }, wantErr: "--webhook-timeout"},
		{name: "timeout not whole seconds", set: func(o *Options) { o.WebhookTimeout = 2500 * time.Millisecond }, wantErr: "--webhook-timeout"},
		{name: "external certificate without a Secret", set: func(o *Options) { o.CertSecretExternal, o.CertSecret = true, "" }, wantErr: "--cert-secret-external needs --cert-secret"},
		{name: "stop a Deployment without uninstalling", set: func(o *Options) { o.StopDeployment = "archfilter-placement" }, wantErr: "--stop-deployment"},
		{name: "stop a Deployment when uninstalling", set: func(o *Options) { o.StopDeployment, o.RemoveGates = "archfilter-placement", true }},
		{name: "misplaced pods evicted", set: func(o *Options) { o.Misplaced = "evict" }},
		{name: "an unknown misplaced mode", set: func(o *Options) { o.Misplaced = "on" }, wantErr: `--misplaced "on"`},
		{name: "evictions without a rate", set: func(o *Options) { o.Misplaced, o.EvictionsPerMinute = "evict", 0 }, wantErr: "--misplaced-evictions-per-minute"},
		{name: "no rate needed to report", set: func(o *Options) { o.Misplaced, o.EvictionsPerMinute = "report", 0 }},
		{name: "metrics on every interface are authenticated", set: func(o *Options) { o.MetricsAddr = ":8080" }},
		{name: "unauthenticated metrics on loopback", set: func(o *Options) { o.MetricsAddr, o.MetricsAuth = "127.0.0.1:8080", MetricsAuthNone }},
		{name: "unauthenticated metrics on localhost", set: func(o *Options) { o.MetricsAddr, o.MetricsAuth = "localhost:8080", MetricsAuthNone }},
		{name: "unauthenticated metrics on every interface", set: func(o *Options) { o.MetricsAddr, o.MetricsAuth = ":8080", MetricsAuthNone }, wantErr: "--metrics-auth=none with --metrics-addr :8080"},
		{name: "unauthenticated metrics on a routable address", set: func(o *Options) { o.MetricsAddr, o.MetricsAuth = "10.0.0.1:8080", MetricsAuthNone }, wantErr: "loopback"},
		{name: "unknown metrics auth", set: func(o *Options) { o.MetricsAuth = "basic" }, wantErr: "--metrics-auth \"basic\""},
		{name: "heal mode reporting", set: func(o *Options) { o.Mode, o.Misplaced = ModeHeal, "report" }},
		{name: "heal mode evicting", set: func(o *Options) { o.Mode, o.Misplaced = ModeHeal, "evict" }},
		{name: "heal mode without the watch", set: func(o *Options) { o.Mode = ModeHeal }, wantErr: "--mode=heal runs only the watch on bound pods: set --misplaced=report or --misplaced=evict"},
		{name: "heal mode, an unknown misplaced mode", set: func(o *Options) { o.Mode, o.Misplaced = ModeHeal, "on" }, wantErr: `--misplaced "on"`},
		{name: "heal mode uninstalling gates", set: func(o *Options) { o.Mode, o.Misplaced, o.RemoveGates = ModeHeal, "report", true }, wantErr: "--remove-gates: a flag of --mode=placement"},
		{name: "heal mode with a webhook URL", set: func(o *Options) { o.Mode, o.Misplaced, o.WebhookURL = ModeHeal, "report", "https://127.0.0.1:1" }, wantErr: "--webhook-url: a flag of --mode=placement"},
		{name: "heal mode with an external certificate", set: func(o *Options) { o.Mode, o.Misplaced, o.CertSecretExternal = ModeHeal, "report", true }, wantErr: "--cert-secret-external"},
		{name: "an unknown mode", set: func(o *Options) { o.Mode = "webhook" }, wantErr: `--mode "webhook": want placement or heal`},
		{name: "TLS 1.1", set: func(o *Options) { o.TLS.MinVersion = "VersionTLS11" }, wantErr: "--tls-min-version"},
		{name: "a CBC suite", set: func(o *Options) { o.TLS.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"} }, wantErr: "--tls-cipher-suites"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			if tc.set != nil {
				tc.set(o)
			}
			err := o.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestLeaseName: each mode elects its leader on a Lease of its own unless
// --lease-name names one, so that a heal-only companion and a placement
// companion in one namespace do not take turns.
func TestLeaseName(t *testing.T) {
	for _, tc := range []struct {
		mode, flag, want string
	}{
		{mode: ModePlacement, want: "archfilter-placement"},
		{mode: ModeHeal, want: "archfilter-heal"},
		{mode: ModeHeal, flag: "mine", want: "mine"},
		{mode: ModePlacement, flag: "mine", want: "mine"},
	} {
		o := NewOptions()
		o.Mode, o.LeaseName = tc.mode, tc.flag
		if got := o.lease(); got != tc.want {
			t.Errorf("--mode=%s --lease-name=%q: Lease %q, want %q", tc.mode, tc.flag, got, tc.want)
		}
	}
	if o := NewOptions(); !o.HotStandby || o.Mode != ModePlacement {
		t.Errorf("defaults: --mode=%s --hot-standby=%v, want placement and true", o.Mode, o.HotStandby)
	}
}

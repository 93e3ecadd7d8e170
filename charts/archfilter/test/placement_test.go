package charttest

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"sigs.k8s.io/yaml"

	afconfig "github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/apis/config/argsfile"
)

// placementInventory is what placement.enabled adds with the default values.
var placementInventory = []string{
	"ClusterRole archfilter-placement",
	"ClusterRoleBinding archfilter-placement",
	"ConfigMap kube-system/archfilter-placement-args",
	"Deployment kube-system/archfilter-placement",
	"PodDisruptionBudget kube-system/archfilter-placement",
	"Role kube-system/archfilter-placement",
	"RoleBinding kube-system/archfilter-placement",
	"Service kube-system/archfilter-placement",
	"ServiceAccount kube-system/archfilter-placement",
}

// uninstallHook is what helm uninstall runs first: its RBAC and the Job.
var uninstallHook = []string{
	"ClusterRole archfilter-placement-uninstall",
	"ClusterRoleBinding archfilter-placement-uninstall",
	"Job kube-system/archfilter-placement-uninstall",
	"Role kube-system/archfilter-placement-uninstall",
	"RoleBinding kube-system/archfilter-placement-uninstall",
	"ServiceAccount kube-system/archfilter-placement-uninstall",
}

var certManagerAPIs = []string{"cert-manager.io/v1", "cert-manager.io/v1/Certificate", "cert-manager.io/v1/Issuer"}

// placementRender is a rendering with the placement mode: its objects, its
// hooks and the companion's parts.
type placementRender struct {
	objs, hooks []k8sruntime.Object
	hookEvents  map[string][]release.HookEvent // by object ID
	deployment  *appsv1.Deployment
	flags       map[string]string // the companion's flags, "--leader-elect" → ""
	argsFile    []byte
}

func renderPlacement(t *testing.T, values string, opts renderOpts) placementRender {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal([]byte(values), &v); err != nil {
		t.Fatal(err)
	}
	rel, err := dryRun(t, v, opts)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	objs, err := decodeAll([]byte(rel.Manifest))
	if err != nil {
		t.Fatalf("%v\n%s", err, rel.Manifest)
	}
	r := placementRender{objs: objs, hookEvents: map[string][]release.HookEvent{}}
	for _, h := range rel.Hooks {
		o, err := decodeAll([]byte(h.Manifest))
		if err != nil || len(o) != 1 {
			t.Fatalf("hook %s: %v (%d objects)", h.Path, err, len(o))
		}
		r.hooks = append(r.hooks, o[0])
		r.hookEvents[id(o[0])] = h.Events
	}
	for _, d := range of[*appsv1.Deployment](objs) {
		if d.Name == "archfilter-placement" || strings.HasSuffix(d.Name, "-placement") {
			r.deployment = d
		}
	}
	if r.deployment == nil {
		t.Fatalf("no placement Deployment in %v", objectIDs(objs))
	}
	r.flags = flagsOf(r.deployment.Spec.Template.Spec.Containers[0].Args)
	for _, cm := range of[*corev1.ConfigMap](objs) {
		if strings.HasSuffix(cm.Name, "-placement-args") {
			r.argsFile = []byte(cm.Data["args.yaml"])
		}
	}
	return r
}

func flagsOf(args []string) map[string]string {
	flags := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		flags[k] = v
	}
	return flags
}

// loadArgs reads the companion's --args file as the companion does
// (apis/config/argsfile: strict, defaulted, validated).
func loadArgs(t *testing.T, data []byte) *afconfig.ArchFilterArgs {
	t.Helper()
	f := filepath.Join(t.TempDir(), "args.yaml")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	args, err := argsfile.Load("--args", f, nil)
	if err != nil {
		t.Fatalf("the companion refuses its --args: %v\n%s", err, data)
	}
	return args
}

// TestRenderPlacement renders the placement mode's values combinations and
// checks what each is meant to change, and what none may: the companion's
// --args is the scheduler's ArchFilterArgs (defaulted and validated by the
// companion's own reader) without the scheduler-only archTaintToleration, and
// helm uninstall's hook runs the companion's --remove-gates with RBAC of its own.
func TestRenderPlacement(t *testing.T) {
	appVersion := loadChart(t).Metadata.AppVersion
	for _, tc := range []struct {
		name   string
		values string
		opts   renderOpts
		want   []string // the objects; nil: baseInventory + placementInventory
		check  func(t *testing.T, r placementRender)
	}{
		{
			name:   "beside the scheduler, with its defaults",
			values: "placement: {enabled: true}",
			check: func(t *testing.T, r placementRender) {
				c := r.deployment.Spec.Template.Spec.Containers[0]
				if want := "archfilter/archfilter-placement:" + appVersion; c.Image != want {
					t.Errorf("image %q, want %q", c.Image, want)
				}
				want := map[string]string{
					"--args": "/etc/archfilter/placement/args.yaml", "--namespace": Namespace, "--service-name": "archfilter-placement",
					"--service-port": "443", "--listen": ":9443", "--metrics-addr": ":8080", "--webhook-config-name": "archfilter-placement",
					"--webhook-timeout": "5s", "--cert-secret": "archfilter-placement-tls", "--cert-validity": "8760h", "--max-gated": "2m",
					"--workers": "4", "--skip-scheduler-names": "archfilter-scheduler", "--leader-elect": "", "--lease-name": "archfilter-placement",
					"--tls-min-version": "VersionTLS12", "--tls-cipher-suites": strings.Join(aeadSuites, ","),
					// The scheduler writes the ArchFilterPolicy objects' status.
					"--policy-status": "false",
				}
				if diff := gocmp.Diff(want, r.flags); diff != "" {
					t.Errorf("flags (-want,+got):\n%s", diff)
				}
				if *r.deployment.Spec.Replicas != 2 {
					t.Errorf("replicas %d, want 2", *r.deployment.Spec.Replicas)
				}
				// One ArchFilterArgs: the companion's is the scheduler's.
				args := loadArgs(t, r.argsFile)
				if diff := gocmp.Diff([]string{"kube-system", "kube-public", "kube-node-lease"}, args.ExcludedNamespaces); diff != "" {
					t.Errorf("excludedNamespaces (-want,+got):\n%s", diff)
				}
				sched, err := archFilterArgs(mustDecodeSchedulerConfig(t, r.objs))
				if err != nil {
					t.Fatal(err)
				}
				if diff := gocmp.Diff(sched["archfilter-scheduler"], args); diff != "" {
					t.Errorf("the companion's ArchFilterArgs differ from the scheduler's (-scheduler,+companion):\n%s", diff)
				}
			},
		},
		{
			name:   "alone: no scheduler, and every ArchFilterArgs field as the scheduler would take it",
			values: "scheduler: {enabled: false}\nplacement: {enabled: true}\narchFilterArgs: {failurePolicy: Fail, fallbackPlatforms: [linux/amd64], namespaceSelector: {matchLabels: {archfilter.io/enabled: \"true\"}}, daemonSetPolicy: Enforce, preferredPlatforms: [{platform: linux/arm64, weight: 50}]}",
			// The metrics reader is the companion's scrapers' too.
			want: append(slices.Clone(placementInventory), "ClusterRole archfilter-scheduler:metrics-reader"),
			check: func(t *testing.T, r placementRender) {
				if got := r.flags["--skip-scheduler-names"]; got != "archfilter-scheduler" {
					t.Errorf("--skip-scheduler-names %q, want archfilter-scheduler", got)
				}
				args := loadArgs(t, r.argsFile)
				if args.FailurePolicy != afconfig.FailurePolicyFail || args.DaemonSetPolicy != afconfig.DaemonSetPolicyEnforce ||
					args.NamespaceSelector == nil || args.NamespaceSelector.MatchLabels["archfilter.io/enabled"] != "true" || len(args.PreferredPlatforms) != 1 {
					t.Errorf("args %+v: want the values' failurePolicy, daemonSetPolicy, namespaceSelector and preferredPlatforms", args)
				}
			},
		},
		{
			name:   "archTaintToleration is the scheduler's alone",
			values: "placement: {enabled: true}\narchFilterArgs: {archTaintToleration: true}",
			check: func(t *testing.T, r placementRender) {
				if strings.Contains(string(r.argsFile), "archTaintToleration") {
					t.Errorf("the companion's --args names archTaintToleration, which it refuses:\n%s", r.argsFile)
				}
				loadArgs(t, r.argsFile)
				sched := schedulerConfig(t, r.objs)
				if !strings.Contains(string(sched), "archTaintToleration: true") {
					t.Errorf("the scheduler lost archTaintToleration:\n%s", sched)
				}
			},
		},
		{
			name:   "every ArchFilterArgs field of all-args.yaml reaches the companion, archTaintToleration aside",
			values: "placement: {enabled: true, extraVolumes: [{name: f, secret: {secretName: s}}], extraVolumeMounts: [{name: f, mountPath: /etc/archfilter-files}]}",
			check:  checkAllArgsReachCompanion,
		},
		{
			name:   "secretNamespaces: the companion's secrets through Roles in those namespaces too",
			values: "placement: {enabled: true}\narchFilterArgs: {secretNamespaces: [team-a]}",
			want: append(append(slices.Clone(baseInventory), placementInventory...),
				"Role team-a/archfilter-placement:pull-secrets", "RoleBinding team-a/archfilter-placement:pull-secrets",
				"Role team-a/archfilter-scheduler:pull-secrets", "RoleBinding team-a/archfilter-scheduler:pull-secrets"),
			check: func(t *testing.T, r placementRender) {
				for _, cr := range of[*rbacv1.ClusterRole](r.objs) {
					for _, rule := range cr.Rules {
						if slices.Contains(rule.Resources, "secrets") {
							t.Errorf("ClusterRole %s grants %v on secrets", cr.Name, rule.Verbs)
						}
					}
				}
				for _, role := range of[*rbacv1.Role](r.objs) {
					if role.Name == "archfilter-placement:pull-secrets" && !slices.Equal(role.Rules[0].Verbs, []string{"get", "list", "watch"}) {
						t.Errorf("Role %s/%s verbs %v", role.Namespace, role.Name, role.Rules[0].Verbs)
					}
				}
			},
		},
		{
			name:   "one replica without leader election: no PodDisruptionBudget, no Lease",
			values: "placement: {enabled: true, replicas: 1, leaderElection: {enabled: false}, maxGated: 5m, workers: 8, webhook: {timeoutSeconds: 12}, skipSchedulerNames: [a, b]}",
			want:   without(append(slices.Clone(baseInventory), placementInventory...), "PodDisruptionBudget kube-system/archfilter-placement"),
			check: func(t *testing.T, r placementRender) {
				if _, ok := r.flags["--leader-elect"]; ok {
					t.Error("--leader-elect with leaderElection off")
				}
				for flag, want := range map[string]string{"--max-gated": "5m", "--workers": "8", "--webhook-timeout": "12s", "--skip-scheduler-names": "a,b"} {
					if r.flags[flag] != want {
						t.Errorf("%s=%q, want %q", flag, r.flags[flag], want)
					}
				}
				for _, role := range of[*rbacv1.Role](r.objs) {
					if role.Name == "archfilter-placement" && slices.ContainsFunc(role.Rules, func(p rbacv1.PolicyRule) bool { return slices.Contains(p.Resources, "leases") }) {
						t.Errorf("Role %s grants leases without leader election", role.Name)
					}
				}
			},
		},
		{
			name:   "misplaced pods evicted: the flags, and the Eviction API in the ClusterRole",
			values: "placement: {enabled: true, misplaced: {mode: evict, evictionsPerMinute: 0.5}}",
			check: func(t *testing.T, r placementRender) {
				for flag, want := range map[string]string{"--misplaced": "evict", "--misplaced-evictions-per-minute": "0.5"} {
					if r.flags[flag] != want {
						t.Errorf("%s=%q, want %q", flag, r.flags[flag], want)
					}
				}
				if !grantsEviction(r.objs) {
					t.Error("the ClusterRole does not grant pods/eviction create")
				}
			},
		},
		{
			name:   "misplaced pods reported: no eviction granted",
			values: "placement: {enabled: true, misplaced: {mode: report}}",
			check: func(t *testing.T, r placementRender) {
				if r.flags["--misplaced"] != "report" {
					t.Errorf("--misplaced=%q, want report", r.flags["--misplaced"])
				}
				if grantsEviction(r.objs) {
					t.Error("pods/eviction granted without mode evict")
				}
			},
		},
		{
			name:   "cert-manager with a CA of the release's own",
			values: "placement: {enabled: true, certificates: {source: cert-manager}}",
			opts:   renderOpts{apiVersions: certManagerAPIs},
			want: append(append(slices.Clone(baseInventory), placementInventory...),
				"Certificate kube-system/archfilter-placement", "Certificate kube-system/archfilter-placement-ca",
				"Issuer kube-system/archfilter-placement-ca", "Issuer kube-system/archfilter-placement-selfsigned"),
			check: func(t *testing.T, r placementRender) {
				if _, ok := r.flags["--cert-secret-external"]; !ok {
					t.Error("no --cert-secret-external: the companion would write cert-manager's Secret")
				}
				if _, ok := r.flags["--cert-validity"]; ok {
					t.Error("--cert-validity with cert-manager's certificate")
				}
				for _, u := range of[*unstructured.Unstructured](r.objs) {
					if u.GetKind() == "Certificate" && u.GetName() == "archfilter-placement" {
						secret, _, _ := unstructured.NestedString(u.Object, "spec", "secretName")
						names, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "dnsNames")
						issuer, _, _ := unstructured.NestedString(u.Object, "spec", "issuerRef", "name")
						if secret != "archfilter-placement-tls" || !slices.Contains(names, "archfilter-placement.kube-system.svc") || issuer != "archfilter-placement-ca" {
							t.Errorf("Certificate: secret %q, dnsNames %v, issuer %q", secret, names, issuer)
						}
					}
				}
				for _, role := range of[*rbacv1.Role](r.objs) {
					if role.Name != "archfilter-placement" {
						continue
					}
					for _, rule := range role.Rules {
						if slices.Contains(rule.Resources, "secrets") && !slices.Equal(rule.Verbs, []string{"get"}) {
							t.Errorf("Role %s: secrets %v, want get only (cert-manager writes the Secret)", role.Name, rule.Verbs)
						}
					}
				}
			},
		},
		{
			name:   "cert-manager with an issuer of one's own",
			values: "placement: {enabled: true, certificates: {source: cert-manager, certManager: {issuerRef: {name: corp-ca, kind: ClusterIssuer, group: cert-manager.io}}}}",
			opts:   renderOpts{apiVersions: certManagerAPIs},
			want:   append(append(slices.Clone(baseInventory), placementInventory...), "Certificate kube-system/archfilter-placement"),
		},
		{
			name: "credential providers in both pods, and what both need to reach registries",
			values: `placement: {enabled: true, serviceAccount: {annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::123456789012:role/archfilter"}}, env: [{name: HTTPS_PROXY, value: "http://proxy:3128"}]}
serviceAccount: {annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::123456789012:role/archfilter"}}
env: [{name: HTTPS_PROXY, value: "http://proxy:3128"}]
credentialProviders:
  enabled: true
  hostPath: /etc/eks/image-credential-provider
  config:
    apiVersion: kubelet.config.k8s.io/v1
    kind: CredentialProviderConfig
    providers:
    - name: ecr-credential-provider
      apiVersion: credentialprovider.kubelet.k8s.io/v1
      matchImages: ["*.dkr.ecr.*.amazonaws.com"]
      defaultCacheDuration: 12h`,
			want: append(append(slices.Clone(baseInventory), placementInventory...), "ConfigMap kube-system/archfilter-scheduler-credential-providers"),
			check: func(t *testing.T, r placementRender) {
				args := loadArgs(t, r.argsFile)
				if args.CredentialProviderConfig != "/etc/archfilter-credential-providers/config.yaml" || args.CredentialProviderBinDir != "/usr/libexec/archfilter/credential-providers" {
					t.Errorf("companion args: credentialProviderConfig %q, credentialProviderBinDir %q", args.CredentialProviderConfig, args.CredentialProviderBinDir)
				}
				if sched := string(schedulerConfig(t, r.objs)); !strings.Contains(sched, "credentialProviderConfig: /etc/archfilter-credential-providers/config.yaml") {
					t.Errorf("the scheduler's args do not name the mounted config:\n%s", sched)
				}
				for _, d := range of[*appsv1.Deployment](r.objs) {
					mounts := map[string]bool{}
					for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
						mounts[m.MountPath] = true
					}
					if !mounts["/etc/archfilter-credential-providers"] || !mounts["/usr/libexec/archfilter/credential-providers"] {
						t.Errorf("Deployment %s mounts %v: want the providers' config and binaries", d.Name, mounts)
					}
					hostPath := false
					for _, v := range d.Spec.Template.Spec.Volumes {
						hostPath = hostPath || v.HostPath != nil && v.HostPath.Path == "/etc/eks/image-credential-provider"
					}
					if !hostPath {
						t.Errorf("Deployment %s: no hostPath volume of the node's providers", d.Name)
					}
				}
			},
		},
		{
			name:   "network policy, ServiceMonitor and the placement alerts",
			values: "placement: {enabled: true}\nnetworkPolicy: {enabled: true, apiServer: {cidrs: [192.0.2.10/32]}}\nmetrics: {serviceMonitor: {enabled: true}, prometheusRule: {enabled: true}}",
			opts:   renderOpts{apiVersions: monitoringAPIs},
			want: append(append(slices.Clone(baseInventory), placementInventory...),
				"NetworkPolicy kube-system/archfilter-scheduler", "NetworkPolicy kube-system/archfilter-placement",
				"ServiceMonitor kube-system/archfilter-scheduler", "ServiceMonitor kube-system/archfilter-placement",
				"PrometheusRule kube-system/archfilter-scheduler"),
			check: func(t *testing.T, r placementRender) {
				for _, np := range of[*networkingv1.NetworkPolicy](r.objs) {
					if np.Name != "archfilter-placement" {
						continue
					}
					var ports []string
					for _, in := range np.Spec.Ingress {
						for _, p := range in.Ports {
							ports = append(ports, p.Port.String())
						}
					}
					if !slices.Equal(ports, []string{"9443", "8080"}) || len(np.Spec.Egress) != 3 {
						t.Errorf("NetworkPolicy %s: ingress ports %v, %d egress rules; want the webhook and metrics in, API server, registries, DNS out", np.Name, ports, len(np.Spec.Egress))
					}
				}
				for _, u := range of[*unstructured.Unstructured](r.objs) {
					switch {
					case u.GetKind() == "PrometheusRule":
						groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
						var names []string
						for _, g := range groups {
							names = append(names, g.(map[string]any)["name"].(string))
						}
						if !slices.Equal(names, []string{"archfilter", "archfilter-placement"}) {
							t.Errorf("PrometheusRule groups %v, want the scheduler's and the placement mode's", names)
						}
					case u.GetKind() == "ServiceMonitor" && u.GetName() == "archfilter-placement":
						ep, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
						if e := ep[0].(map[string]any); e["port"] != "metrics" || e["scheme"] != "https" || e["bearerTokenFile"] == nil {
							t.Errorf("placement ServiceMonitor endpoint %v, want https on metrics with Prometheus's token", e)
						}
					}
				}
			},
		},
		{
			name:   "a second release: the companion's names follow fullnameOverride",
			values: "fullnameOverride: af2\nplacement: {enabled: true}",
			want: []string{
				"ClusterRole af2", "ClusterRole af2-placement", "ClusterRole af2:metrics-reader", "ClusterRoleBinding af2", "ClusterRoleBinding af2-placement",
				"ClusterRoleBinding af2:kube-scheduler", "ClusterRoleBinding af2:volume-scheduler", "ConfigMap kube-system/af2-config",
				"ConfigMap kube-system/af2-placement-args", "Deployment kube-system/af2", "Deployment kube-system/af2-placement",
				"PodDisruptionBudget kube-system/af2", "PodDisruptionBudget kube-system/af2-placement", "Role kube-system/af2-placement",
				"Role kube-system/af2:leader-election", "RoleBinding kube-system/af2-placement",
				"RoleBinding kube-system/af2:extension-apiserver-authentication-reader", "RoleBinding kube-system/af2:leader-election",
				"Service kube-system/af2-metrics", "Service kube-system/af2-placement", "ServiceAccount kube-system/af2",
				"ServiceAccount kube-system/af2-placement",
			},
			check: func(t *testing.T, r placementRender) {
				for _, f := range []string{"--webhook-config-name", "--lease-name", "--service-name"} {
					if r.flags[f] != "af2-placement" {
						t.Errorf("%s=%q, want af2-placement", f, r.flags[f])
					}
				}
				if r.flags["--skip-scheduler-names"] != "af2" || r.flags["--cert-secret"] != "af2-placement-tls" {
					t.Errorf("--skip-scheduler-names=%q --cert-secret=%q", r.flags["--skip-scheduler-names"], r.flags["--cert-secret"])
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := renderPlacement(t, tc.values, tc.opts)
			want := tc.want
			if want == nil {
				want = append(slices.Clone(baseInventory), placementInventory...)
			}
			want = slices.Clone(want)
			sort.Strings(want)
			if diff := gocmp.Diff(want, objectIDs(r.objs)); diff != "" {
				t.Errorf("objects (-want,+got):\n%s", diff)
			}
			checkUninstallHook(t, r)
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(list, func(s string) bool { return slices.Contains(drop, s) })
}

type schedConfigDecoded = schedconfig.KubeSchedulerConfiguration

// mustDecodeSchedulerConfig decodes the scheduler's configuration as
// kube-scheduler does.
func mustDecodeSchedulerConfig(t *testing.T, objs []k8sruntime.Object) *schedConfigDecoded {
	t.Helper()
	for _, cm := range of[*corev1.ConfigMap](objs) {
		if raw, ok := cm.Data["config.yaml"]; ok {
			cfg, err := decodeSchedulerConfig([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			return cfg
		}
	}
	t.Fatal("no scheduler configuration")
	return nil
}

// checkAllArgsReachCompanion: all-args.yaml's ArchFilterArgs (every field set
// away from its default) given as archFilterArgs reach the companion's --args
// exactly as the scheduler's, but for archTaintToleration.
func checkAllArgsReachCompanion(t *testing.T, _ placementRender) {
	var file struct {
		Profiles []struct {
			PluginConfig []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(readFile(t, "manifests/scheduler-config/all-args.yaml"), &file); err != nil {
		t.Fatal(err)
	}
	var args map[string]any
	for _, pc := range file.Profiles[0].PluginConfig {
		if pc.Name == "ArchFilter" {
			args = pc.Args
		}
	}
	// The files all-args.yaml names, mounted into the companion as into the scheduler.
	var mounts []any
	paths := map[string]bool{}
	for _, k := range []string{"dockerConfigFile", "credentialProviderConfig", "credentialProviderBinDir"} {
		if p, ok := args[k].(string); ok {
			paths[filepath.Dir(p)] = true
		}
	}
	for _, r := range args["registries"].([]any) {
		if p, ok := r.(map[string]any)["caFile"].(string); ok {
			paths[filepath.Dir(p)] = true
		}
	}
	var vols []any
	for i, p := range slices.Sorted(mapKeys(paths)) {
		name := "f" + string(rune('a'+i))
		vols = append(vols, map[string]any{"name": name, "emptyDir": map[string]any{}})
		mounts = append(mounts, map[string]any{"name": name, "mountPath": p})
	}
	values := map[string]any{"archFilterArgs": args, "placement": map[string]any{"enabled": true, "extraVolumes": vols, "extraVolumeMounts": mounts}}
	rel, err := dryRun(t, values, renderOpts{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeAll([]byte(rel.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	var argsFile []byte
	for _, cm := range of[*corev1.ConfigMap](objs) {
		if cm.Name == "archfilter-placement-args" {
			argsFile = []byte(cm.Data["args.yaml"])
		}
	}
	companion := loadArgs(t, argsFile)
	sched, err := archFilterArgs(mustDecodeSchedulerConfig(t, objs))
	if err != nil {
		t.Fatal(err)
	}
	want := sched["archfilter-scheduler"].DeepCopy()
	if !want.ArchTaintToleration {
		t.Fatal("all-args.yaml no longer sets archTaintToleration: this check would prove nothing about it")
	}
	want.ArchTaintToleration = false
	if diff := gocmp.Diff(want, companion); diff != "" {
		t.Errorf("ArchFilterArgs (-scheduler,+companion):\n%s", diff)
	}
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkUninstallHook: helm uninstall's pre-delete hooks are the RBAC, then
// the Job running the companion's --remove-gates (after scaling it to zero)
// from the companion's image as the hook's ServiceAccount, failing the
// uninstall when it fails; the RBAC grants exactly what the uninstall does.
func checkUninstallHook(t *testing.T, r placementRender) {
	t.Helper()
	name := r.deployment.Name
	// The scheduler's own hook (uninstall_test.go) is not the mode's.
	r.hooks = slices.DeleteFunc(slices.Clone(r.hooks), func(o k8sruntime.Object) bool {
		return !strings.Contains(id(o), name+"-uninstall")
	})
	ids := objectIDs(r.hooks)
	var want []string
	for _, h := range uninstallHook {
		want = append(want, strings.ReplaceAll(h, "archfilter-placement", name))
	}
	if diff := gocmp.Diff(want, ids); diff != "" {
		t.Fatalf("hooks (-want,+got):\n%s", diff)
	}
	for _, o := range r.hooks {
		if ev := r.hookEvents[id(o)]; !slices.Equal(ev, []release.HookEvent{release.HookPreDelete}) {
			t.Errorf("%s: hook events %v, want pre-delete only", id(o), ev)
		}
	}
	job := one[*batchv1.Job](t, r.hooks)
	if job.Annotations["helm.sh/hook-weight"] != "0" || job.Annotations["helm.sh/hook-output-log-policy"] != "hook-failed" ||
		job.Annotations["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
		t.Errorf("Job annotations %v: want weight 0 (after its RBAC), its log printed on failure, kept on failure", job.Annotations)
	}
	if job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.BackoffLimit > 3 {
		t.Errorf("Job without a deadline, or retried %d times", *job.Spec.BackoffLimit)
	}
	p := job.Spec.Template.Spec
	c := p.Containers[0]
	if c.Image != r.deployment.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("hook image %q, want the companion's %q", c.Image, r.deployment.Spec.Template.Spec.Containers[0].Image)
	}
	if p.ServiceAccountName != name+"-uninstall" || p.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("hook pod: serviceAccount %q restartPolicy %s", p.ServiceAccountName, p.RestartPolicy)
	}
	flags := flagsOf(c.Args)
	for f, v := range map[string]string{"--remove-gates": "", "--stop-deployment": name, "--webhook-config-name": r.flags["--webhook-config-name"],
		"--lease-name": cmp.Or(r.flags["--lease-name"], name), "--cert-secret": r.flags["--cert-secret"], "--namespace": r.flags["--namespace"]} {
		if got, ok := flags[f]; !ok || got != v {
			t.Errorf("hook flag %s=%q, want %q (the companion's)", f, got, v)
		}
	}
	_, ext := r.flags["--cert-secret-external"]
	if _, hookExt := flags["--cert-secret-external"]; hookExt != ext {
		t.Errorf("hook --cert-secret-external %v, companion %v: the hook would delete cert-manager's Secret", hookExt, ext)
	}
	for _, o := range r.hooks {
		if o.GetObjectKind().GroupVersionKind().Kind == "Job" {
			continue
		}
		annotations := map[string]string{}
		switch v := o.(type) {
		case *corev1.ServiceAccount:
			annotations = v.Annotations
		case *rbacv1.ClusterRole:
			annotations = v.Annotations
		case *rbacv1.ClusterRoleBinding:
			annotations = v.Annotations
		case *rbacv1.Role:
			annotations = v.Annotations
		case *rbacv1.RoleBinding:
			annotations = v.Annotations
		}
		if annotations["helm.sh/hook-weight"] != "-10" {
			t.Errorf("%s: hook weight %q, want -10 (before the Job)", id(o), annotations["helm.sh/hook-weight"])
		}
	}
}

// TestRenderPlacementRejects: combinations that cannot work, refused with a
// message naming the value to change.
func TestRenderPlacementRejects(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		opts         renderOpts
		want         []string
	}{
		{name: "nothing to install", values: "scheduler: {enabled: false}", want: []string{"scheduler.enabled", "placement.enabled"}},
		{name: "no replica", values: "placement: {enabled: true, replicas: 0}", want: []string{"/placement/replicas"}},
		{name: "replicas without leader election", values: "placement: {enabled: true, leaderElection: {enabled: false}}", want: []string{"placement.leaderElection.enabled"}},
		{
			name:   "the scheduler's docker config not mounted into the companion",
			values: "placement: {enabled: true}\narchFilterArgs: {dockerConfigFile: /etc/archfilter-docker/config.json}\nextraVolumes: [{name: d, secret: {secretName: s}}]\nextraVolumeMounts: [{name: d, mountPath: /etc/archfilter-docker}]",
			want:   []string{"placement.extraVolumeMounts", "archFilterArgs.dockerConfigFile", "/etc/archfilter-docker/config.json"},
		},
		{
			name:   "a registry CA not mounted into the companion",
			values: "placement: {enabled: true, extraVolumeMounts: [{name: d, mountPath: /etc/other}], extraVolumes: [{name: d, emptyDir: {}}]}\narchFilterArgs: {registries: [{host: r.example.com, caFile: /etc/certs/ca.pem}]}",
			want:   []string{"placement.extraVolumeMounts", "archFilterArgs.registries[0].caFile"},
		},
		{
			name:   "the scheduler's cloud identity, not the companion's",
			values: "placement: {enabled: true}\nserviceAccount: {annotations: {iam.gke.io/gcp-service-account: archfilter@p.iam.gserviceaccount.com}}",
			want:   []string{"placement.serviceAccount.annotations", "iam.gke.io/gcp-service-account"},
		},
		{
			name:   "the scheduler's proxy, not the companion's",
			values: "placement: {enabled: true}\nenv: [{name: HTTPS_PROXY, value: 'http://proxy:3128'}]",
			want:   []string{"placement.env", "HTTPS_PROXY"},
		},
		{name: "cert-manager without cert-manager", values: "placement: {enabled: true, certificates: {source: cert-manager}}", want: []string{"placement.certificates.source", "cert-manager.io/v1"}},
		{name: "latest", values: "placement: {enabled: true, image: {tag: latest}}", want: []string{"placement.image.tag", "latest"}},
		{name: "credential providers without the node's directory", values: "placement: {enabled: true}\ncredentialProviders: {enabled: true, config: {apiVersion: kubelet.config.k8s.io/v1, kind: CredentialProviderConfig, providers: [{name: p, apiVersion: credentialprovider.kubelet.k8s.io/v1, matchImages: [x]}]}}", want: []string{"credentialProviders.hostPath"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			_, err := render(t, values, tc.opts)
			if err == nil {
				t.Fatalf("rendered %s", tc.values)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestPlacementMatchesOverlay: installed into kube-system, the chart's
// companion has exactly manifests/overlays/placement's RBAC (the reference
// for what the companion needs) and runs as the overlay's does.
func TestPlacementMatchesOverlay(t *testing.T) {
	var overlay []k8sruntime.Object
	for _, f := range []string{"rbac.yaml", "deployment.yaml", "service.yaml"} {
		o, err := decodeAll(readFile(t, "manifests/overlays/placement/"+f))
		if err != nil {
			t.Fatalf("manifests/overlays/placement/%s: %v", f, err)
		}
		overlay = append(overlay, o...)
	}
	r := renderPlacement(t, "scheduler: {enabled: false}\nplacement: {enabled: true}", renderOpts{})
	chartRBAC := rbacOf(r.objs)
	// The metrics reader grants the scraper, not the companion (kustomize
	// users bind theirs to system:monitoring).
	delete(chartRBAC, "ClusterRole archfilter-scheduler:metrics-reader")
	if diff := gocmp.Diff(rbacOf(overlay), chartRBAC); diff != "" {
		t.Errorf("RBAC (-manifests/overlays/placement,+chart):\n%s", diff)
	}
	want, got := one[*appsv1.Deployment](t, overlay).Spec.Template.Spec, r.deployment.Spec.Template.Spec
	for _, c := range []struct {
		what      string
		want, got any
	}{
		{"pod securityContext", want.SecurityContext, got.SecurityContext},
		{"priorityClassName", want.PriorityClassName, got.PriorityClassName},
		{"nodeSelector", want.NodeSelector, got.NodeSelector},
		{"container securityContext", want.Containers[0].SecurityContext.Capabilities, got.Containers[0].SecurityContext.Capabilities},
		{"ports", want.Containers[0].Ports[0].ContainerPort, got.Containers[0].Ports[0].ContainerPort},
		{"replicas", 2, int(*r.deployment.Spec.Replicas)},
	} {
		if diff := gocmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("Deployment %s (-overlay,+chart):\n%s", c.what, diff)
		}
	}
	ws, gs := one[*corev1.Service](t, overlay).Spec.Ports[0], r.objs
	for _, s := range of[*corev1.Service](gs) {
		if s.Spec.Ports[0].Port != ws.Port || s.Spec.Ports[0].TargetPort != ws.TargetPort {
			t.Errorf("webhook Service port %v, overlay's %v", s.Spec.Ports[0], ws)
		}
	}
}

// grantsEviction reports whether a ClusterRole of objs lets its subject create
// pods/eviction.
func grantsEviction(objs []k8sruntime.Object) bool {
	for _, role := range of[*rbacv1.ClusterRole](objs) {
		for _, rule := range role.Rules {
			if slices.Contains(rule.Resources, "pods/eviction") && slices.Contains(rule.Verbs, "create") {
				return true
			}
		}
	}
	return false
}

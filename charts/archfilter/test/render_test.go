package charttest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/test/manifests/objects"
)

// monitoringAPIs are the Prometheus Operator kinds, as a cluster with its CRDs serves them.
var monitoringAPIs = []string{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"}

// TestLint runs helm lint (strict: warnings fail too) with the default values
// and with every optional part switched on.
func TestLint(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"defaults":                            nil,
		"replacement":                         {"mode": "replacement"},
		"placement beside the scheduler":      {"placement": map[string]any{"enabled": true}},
		"placement alone":                     {"scheduler": map[string]any{"enabled": false}, "placement": map[string]any{"enabled": true, "replicas": 1, "leaderElection": map[string]any{"enabled": false}}},
		"heal beside the scheduler, evicting": {"heal": map[string]any{"enabled": true, "mode": "evict"}, "networkPolicy": map[string]any{"enabled": true, "apiServer": map[string]any{"cidrs": []any{"10.0.0.1/32"}}}},
		"everything": {
			"networkPolicy": map[string]any{"enabled": true, "apiServer": map[string]any{"cidrs": []any{"10.0.0.1/32"}}},
			"image":         map[string]any{"flavour": "k8s1.35", "digest": "sha256:" + strings.Repeat("a", 64)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			linter := lint.AllWithKubeVersion(chartDir(), values, Namespace, &chartutil.KubeVersion{Version: "v1.36.5", Major: "1", Minor: "36"})
			for _, msg := range linter.Messages {
				if msg.Severity >= support.WarningSev {
					t.Errorf("%s", msg)
				} else {
					t.Logf("%s", msg)
				}
			}
		})
	}
}

// objectIDs names every object "Kind namespace/name", sorted.
func objectIDs(objs []k8sruntime.Object) []string {
	var ids []string
	for _, o := range objs {
		ids = append(ids, id(o))
	}
	sort.Strings(ids)
	return ids
}

var id = objects.ID

// of returns the objects of type T.
func of[T k8sruntime.Object](objs []k8sruntime.Object) []T { return objects.Of[T](objs) }

// one returns the only object of type T, failing the test otherwise.
func one[T k8sruntime.Object](t *testing.T, objs []k8sruntime.Object) T {
	t.Helper()
	found := of[T](objs)
	if len(found) != 1 {
		var zero T
		t.Fatalf("want one %T, got %d in %v", zero, len(found), objectIDs(objs))
	}
	return found[0]
}

// schedulerConfig is the KubeSchedulerConfiguration the chart's ConfigMap holds.
func schedulerConfig(t *testing.T, objs []k8sruntime.Object) []byte {
	t.Helper()
	// The scheduler's ConfigMap; the placement mode's and the credential
	// providers' hold other files.
	cm := one[*corev1.ConfigMap](t, slices.DeleteFunc(slices.Clone(objs), func(o k8sruntime.Object) bool {
		c, ok := o.(*corev1.ConfigMap)
		return ok && !strings.HasSuffix(c.Name, "-config")
	}))
	cfg, ok := cm.Data["config.yaml"]
	if !ok || len(cm.Data) != 1 {
		t.Fatalf("ConfigMap %s: keys %v, want config.yaml", cm.Name, slices.Sorted(mapsKeys(cm.Data)))
	}
	return []byte(cfg)
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// baseInventory is what every mode renders with the default values.
var baseInventory = []string{
	"ClusterRole archfilter-scheduler",
	"ClusterRole archfilter-scheduler:metrics-reader",
	"ClusterRoleBinding archfilter-scheduler",
	"ClusterRoleBinding archfilter-scheduler:kube-scheduler",
	"ClusterRoleBinding archfilter-scheduler:volume-scheduler",
	"ConfigMap kube-system/archfilter-scheduler-config",
	"Deployment kube-system/archfilter-scheduler",
	"PodDisruptionBudget kube-system/archfilter-scheduler",
	"Role kube-system/archfilter-scheduler:leader-election",
	"RoleBinding kube-system/archfilter-scheduler:extension-apiserver-authentication-reader",
	"RoleBinding kube-system/archfilter-scheduler:leader-election",
	"Service kube-system/archfilter-scheduler-metrics",
	"ServiceAccount kube-system/archfilter-scheduler",
}

// TestRender renders each mode and values combination and checks what the
// values are meant to change.
func TestRender(t *testing.T) {
	appVersion := loadChart(t).Metadata.AppVersion
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name   string
		values string
		opts   renderOpts
		// extra and missing objects compared with baseInventory.
		extra, missing []string
		check          func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig)
	}{
		{
			name: "secondary by default",
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				d := one[*appsv1.Deployment](t, objs)
				if got, want := d.Spec.Template.Spec.Containers[0].Image, "archfilter/archfilter-scheduler:"+appVersion; got != want {
					t.Errorf("image %q, want %q (appVersion)", got, want)
				}
				if got := cfg.Profiles[0].SchedulerName; got != "archfilter-scheduler" {
					t.Errorf("schedulerName %q", got)
				}
				if le := cfg.LeaderElection; le.ResourceName != "archfilter-scheduler" || le.ResourceNamespace != Namespace {
					t.Errorf("lease %s/%s, want %s/archfilter-scheduler", le.ResourceNamespace, le.ResourceName, Namespace)
				}
				pdb := one[*policyv1.PodDisruptionBudget](t, objs)
				if pdb.Spec.MaxUnavailable.IntValue() != 1 {
					t.Errorf("PodDisruptionBudget maxUnavailable %v", pdb.Spec.MaxUnavailable)
				}
			},
		},
		{
			name:   "replacement: the default-scheduler profile on kube-scheduler's lease",
			values: `mode: replacement`,
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				if got := cfg.Profiles[0].SchedulerName; got != "default-scheduler" {
					t.Errorf("schedulerName %q, want default-scheduler", got)
				}
				if le := cfg.LeaderElection; le.ResourceName != "kube-scheduler" || le.ResourceNamespace != "kube-system" || !le.LeaderElect {
					t.Errorf("leaderElection %+v, want the lease kube-system/kube-scheduler", le)
				}
				for _, r := range of[*rbacv1.Role](objs) {
					if r.Name == "archfilter-scheduler:leader-election" && !slices.Equal(r.Rules[0].ResourceNames, []string{"kube-scheduler"}) {
						t.Errorf("Role %s names %v, want the lease kube-scheduler", r.Name, r.Rules[0].ResourceNames)
					}
				}
			},
		},
		{
			name:   "replacement in another namespace keeps the lease in kube-system",
			values: `mode: replacement`,
			opts:   renderOpts{namespace: "archfilter"},
			missing: []string{
				"ConfigMap kube-system/archfilter-scheduler-config", "Deployment kube-system/archfilter-scheduler",
				"PodDisruptionBudget kube-system/archfilter-scheduler", "Service kube-system/archfilter-scheduler-metrics",
				"ServiceAccount kube-system/archfilter-scheduler",
			},
			extra: []string{
				"ConfigMap archfilter/archfilter-scheduler-config", "Deployment archfilter/archfilter-scheduler",
				"PodDisruptionBudget archfilter/archfilter-scheduler", "Service archfilter/archfilter-scheduler-metrics",
				"ServiceAccount archfilter/archfilter-scheduler",
			},
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				if le := cfg.LeaderElection; le.ResourceNamespace != "kube-system" {
					t.Errorf("lease namespace %q, want kube-system", le.ResourceNamespace)
				}
				for _, b := range of[*rbacv1.RoleBinding](objs) {
					if s := b.Subjects[0]; s.Namespace != "archfilter" {
						t.Errorf("RoleBinding %s binds %s/%s, want the ServiceAccount in archfilter", b.Name, s.Namespace, s.Name)
					}
				}
			},
		},
		{
			name:   "a scheduler name and a lease of one's own",
			values: "schedulerName: arch-aware\nleaderElection: {resourceName: arch-aware, leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 4s}",
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				if cfg.Profiles[0].SchedulerName != "arch-aware" || cfg.LeaderElection.ResourceName != "arch-aware" {
					t.Errorf("schedulerName %q lease %q, want arch-aware", cfg.Profiles[0].SchedulerName, cfg.LeaderElection.ResourceName)
				}
				if le := cfg.LeaderElection; le.LeaseDuration != "30s" || le.RenewDeadline != "20s" || le.RetryPeriod != "4s" {
					t.Errorf("leaderElection %+v", le)
				}
			},
		},
		{
			name:    "one replica without leader election: no lease Role, no PodDisruptionBudget",
			values:  "replicas: 1\nleaderElection: {enabled: false}",
			missing: []string{"PodDisruptionBudget kube-system/archfilter-scheduler", "Role kube-system/archfilter-scheduler:leader-election", "RoleBinding kube-system/archfilter-scheduler:leader-election"},
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				if cfg.LeaderElection.LeaderElect || cfg.LeaderElection.ResourceName != "" {
					t.Errorf("leaderElection %+v, want off", cfg.LeaderElection)
				}
				if r := one[*appsv1.Deployment](t, objs).Spec.Replicas; *r != 1 {
					t.Errorf("replicas %d", *r)
				}
			},
		},
		{
			name:   "the k8s1.35 flavour: the tag's suffix",
			values: "image: {flavour: k8s1.35}",
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				if got, want := one[*appsv1.Deployment](t, objs).Spec.Template.Spec.Containers[0].Image, "archfilter/archfilter-scheduler:"+appVersion+"-k8s1.35"; got != want {
					t.Errorf("image %q, want %q", got, want)
				}
			},
		},
		{
			name:   "a tag of one's own, the k8s1.35 flavour and a digest",
			values: "image: {repository: registry.example.com/archfilter, tag: v9.8.7, flavour: k8s1.35, digest: " + digest + ", pullPolicy: Always}",
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				c := one[*appsv1.Deployment](t, objs).Spec.Template.Spec.Containers[0]
				if want := "registry.example.com/archfilter:v9.8.7-k8s1.35@" + digest; c.Image != want || c.ImagePullPolicy != corev1.PullAlways {
					t.Errorf("image %q %s, want %q Always", c.Image, c.ImagePullPolicy, want)
				}
			},
		},
		{
			name:   "a digest alone",
			values: "image: {digest: " + digest + "}",
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				if got, want := one[*appsv1.Deployment](t, objs).Spec.Template.Spec.Containers[0].Image, "archfilter/archfilter-scheduler@"+digest; got != want {
					t.Errorf("image %q, want %q", got, want)
				}
			},
		},
		{
			name: "pod placement, pull secrets, resources, extra flags, environment and volumes",
			values: `
imagePullSecrets: [{name: regcred}]
nodeSelector: {kubernetes.io/os: linux, node-role.kubernetes.io/control-plane: ""}
tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app.kubernetes.io/name: archfilter-scheduler}}}]}}
topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]
resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {memory: 4Gi}}
extraArgs: [--v=4]
env: [{name: HTTPS_PROXY, value: "http://proxy.example.com:3128"}]
extraVolumes: [{name: docker, secret: {secretName: archfilter-docker-config}}]
extraVolumeMounts: [{name: docker, mountPath: /etc/archfilter/docker, readOnly: true}]
podAnnotations: {example.com/owner: platform}
podLabels: {example.com/team: platform}
priorityClassName: system-node-critical
serviceAccount: {annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::123456789012:role/archfilter"}}
archFilterArgs: {dockerConfigFile: /etc/archfilter/docker/config.json}
`,
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				spec := one[*appsv1.Deployment](t, objs).Spec.Template
				p := spec.Spec
				c := p.Containers[0]
				checks := map[string]bool{
					"imagePullSecrets":          len(p.ImagePullSecrets) == 1 && p.ImagePullSecrets[0].Name == "regcred",
					"nodeSelector":              len(p.NodeSelector) == 2,
					"tolerations":               len(p.Tolerations) == 1 && p.Tolerations[0].Key == "node-role.kubernetes.io/control-plane",
					"affinity":                  p.Affinity != nil && p.Affinity.PodAntiAffinity != nil,
					"topologySpreadConstraints": len(p.TopologySpreadConstraints) == 1 && p.TopologySpreadConstraints[0].TopologyKey == "topology.kubernetes.io/zone",
					"resources":                 c.Resources.Limits.Memory().String() == "4Gi" && c.Resources.Requests.Cpu().String() == "500m",
					"args":                      slices.Equal(c.Args, []string{"--config=/etc/archfilter/config.yaml", "--tls-min-version=VersionTLS12", "--tls-cipher-suites=" + strings.Join(aeadSuites, ","), "--v=4"}),
					"env":                       len(c.Env) == 1 && c.Env[0].Name == "HTTPS_PROXY",
					"volumes":                   len(p.Volumes) == 2 && p.Volumes[1].Secret != nil,
					"volumeMounts":              len(c.VolumeMounts) == 2 && c.VolumeMounts[1].MountPath == "/etc/archfilter/docker",
					"podAnnotations":            spec.Annotations["example.com/owner"] == "platform" && spec.Annotations["checksum/config"] != "",
					"podLabels":                 spec.Labels["example.com/team"] == "platform",
					"priorityClassName":         p.PriorityClassName == "system-node-critical",
					"serviceAccount":            one[*corev1.ServiceAccount](t, objs).Annotations["eks.amazonaws.com/role-arn"] != "",
				}
				for what, ok := range checks {
					if !ok {
						t.Errorf("%s not rendered as given", what)
					}
				}
				if got := cfg.Profiles[0].PluginConfig[0].Args["dockerConfigFile"]; got != "/etc/archfilter/docker/config.json" {
					t.Errorf("args.dockerConfigFile %v", got)
				}
			},
		},
		{
			name:   "ArchFilter not first among the PreEnqueue and Filter plugins",
			values: "archFilterFirst: false",
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				if cfg.Profiles[0].Plugins.Filter != nil {
					t.Errorf("plugins.filter %+v, want none", cfg.Profiles[0].Plugins.Filter)
				}
				if cfg.Profiles[0].Plugins.PreEnqueue != nil {
					t.Errorf("plugins.preEnqueue %+v, want none", cfg.Profiles[0].Plugins.PreEnqueue)
				}
			},
		},
		{
			name:   "network policy: API server, registries, DNS; metrics from one namespace",
			values: `networkPolicy: {enabled: true, apiServer: {cidrs: [192.0.2.10/32, "2001:db8::10/128"]}, metricsFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]}`,
			extra:  []string{"NetworkPolicy kube-system/archfilter-scheduler"},
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				np := one[*networkingv1.NetworkPolicy](t, objs)
				if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
					t.Errorf("policyTypes %v", np.Spec.PolicyTypes)
				}
				if len(np.Spec.Ingress) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != 10259 || len(np.Spec.Ingress[0].From) != 1 {
					t.Errorf("ingress %+v, want 10259 from the monitoring namespace", np.Spec.Ingress)
				}
				var got []string
				for _, e := range np.Spec.Egress {
					var to, ports []string
					for _, peer := range e.To {
						switch {
						case peer.IPBlock != nil:
							to = append(to, peer.IPBlock.CIDR+" except "+strings.Join(peer.IPBlock.Except, ","))
						case peer.PodSelector != nil:
							to = append(to, "pods "+peer.PodSelector.MatchLabels["k8s-app"])
						}
					}
					for _, p := range e.Ports {
						ports = append(ports, fmt.Sprintf("%s/%s", p.Port, *p.Protocol))
					}
					got = append(got, strings.Join(to, "; ")+" -> "+strings.Join(ports, ","))
				}
				want := []string{
					"192.0.2.10/32 except ; 2001:db8::10/128 except  -> 443/TCP,6443/TCP",
					"0.0.0.0/0 except 169.254.0.0/16; ::/0 except fe80::/10 -> 443/TCP,80/TCP",
					"pods kube-dns -> 53/UDP,53/TCP",
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("egress (-want,+got):\n%s", diff)
				}
			},
		},
		{
			name:    "no metrics Service, no metrics reader",
			values:  "metrics: {service: {enabled: false}, reader: {create: false}}",
			missing: []string{"Service kube-system/archfilter-scheduler-metrics", "ClusterRole archfilter-scheduler:metrics-reader"},
		},
		{
			name:   "secretNamespaces: secrets through Roles in those namespaces, not the ClusterRole",
			values: "archFilterArgs: {secretNamespaces: [team-a, kube-system], globalPullSecret: {namespace: kube-system, name: pull}}",
			extra: []string{
				"Role kube-system/archfilter-scheduler:pull-secrets", "Role team-a/archfilter-scheduler:pull-secrets",
				"RoleBinding kube-system/archfilter-scheduler:pull-secrets", "RoleBinding team-a/archfilter-scheduler:pull-secrets",
			},
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				for _, r := range of[*rbacv1.ClusterRole](objs) {
					for _, rule := range r.Rules {
						if slices.Contains(rule.Resources, "secrets") {
							t.Errorf("ClusterRole %s grants %v on secrets", r.Name, rule.Verbs)
						}
					}
				}
				for _, r := range of[*rbacv1.Role](objs) {
					if strings.HasSuffix(r.Name, ":pull-secrets") && !cmp.Equal(r.Rules, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list", "watch"}}}) {
						t.Errorf("Role %s/%s rules %+v, want list and watch on secrets", r.Namespace, r.Name, r.Rules)
					}
				}
				for _, b := range of[*rbacv1.RoleBinding](objs) {
					if strings.HasSuffix(b.Name, ":pull-secrets") && (b.RoleRef.Name != b.Name || b.Subjects[0].Name != "archfilter-scheduler") {
						t.Errorf("RoleBinding %s/%s binds %s to %s", b.Namespace, b.Name, b.RoleRef.Name, b.Subjects[0].Name)
					}
				}
			},
		},
		{
			name:   "the metrics reader bound to Prometheus",
			values: "metrics: {reader: {subjects: [{kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}]}}",
			extra:  []string{"ClusterRoleBinding archfilter-scheduler:metrics-reader"},
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				for _, r := range of[*rbacv1.ClusterRole](objs) {
					if r.Name == "archfilter-scheduler:metrics-reader" && !slices.Equal(r.Rules[0].NonResourceURLs, []string{"/metrics"}) {
						t.Errorf("%s rules %+v", r.Name, r.Rules)
					}
				}
			},
		},
		{
			name:   "ServiceMonitor and PrometheusRule where the cluster serves them",
			values: "metrics: {serviceMonitor: {enabled: true, labels: {release: kube-prometheus}}, prometheusRule: {enabled: true}}",
			opts:   renderOpts{apiVersions: monitoringAPIs},
			extra:  []string{"PrometheusRule kube-system/archfilter-scheduler", "ServiceMonitor kube-system/archfilter-scheduler"},
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				for _, u := range of[*unstructured.Unstructured](objs) {
					switch u.GetKind() {
					case "ServiceMonitor":
						ep, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
						if len(ep) != 1 {
							t.Fatalf("endpoints %v", ep)
						}
						e := ep[0].(map[string]any)
						tls, _ := e["tlsConfig"].(map[string]any)
						if e["port"] != "https" || e["scheme"] != "https" || e["bearerTokenFile"] == nil || tls["insecureSkipVerify"] != true {
							t.Errorf("endpoint %v: want https with the bearer token and tlsConfig", e)
						}
						if u.GetLabels()["release"] != "kube-prometheus" {
							t.Errorf("labels %v", u.GetLabels())
						}
					case "PrometheusRule":
						var file map[string]any
						if err := yaml.Unmarshal(readFile(t, "charts/archfilter/files/prometheus-rules.yaml"), &file); err != nil {
							t.Fatal(err)
						}
						// The scheduler's group: the placement mode is off.
						want := slices.DeleteFunc(slices.Clone(file["groups"].([]any)), func(g any) bool { return g.(map[string]any)["name"] != "archfilter" })
						if diff := cmp.Diff(any(want), u.Object["spec"].(map[string]any)["groups"]); diff != "" || len(want) != 1 {
							t.Errorf("PrometheusRule groups differ from files/prometheus-rules.yaml's archfilter group (-file,+rendered):\n%s", diff)
						}
					}
				}
			},
		},
		{
			name:    "a second release: every name overridden",
			values:  "fullnameOverride: archfilter-two",
			missing: baseInventory,
			extra: []string{
				"ClusterRole archfilter-two", "ClusterRole archfilter-two:metrics-reader", "ClusterRoleBinding archfilter-two",
				"ClusterRoleBinding archfilter-two:kube-scheduler", "ClusterRoleBinding archfilter-two:volume-scheduler",
				"ConfigMap kube-system/archfilter-two-config", "Deployment kube-system/archfilter-two",
				"PodDisruptionBudget kube-system/archfilter-two", "Role kube-system/archfilter-two:leader-election",
				"RoleBinding kube-system/archfilter-two:extension-apiserver-authentication-reader",
				"RoleBinding kube-system/archfilter-two:leader-election", "Service kube-system/archfilter-two-metrics",
				"ServiceAccount kube-system/archfilter-two",
			},
			check: func(t *testing.T, objs []k8sruntime.Object, cfg schedConfig) {
				if cfg.Profiles[0].SchedulerName != "archfilter-two" || cfg.LeaderElection.ResourceName != "archfilter-two" {
					t.Errorf("schedulerName %q lease %q, want archfilter-two", cfg.Profiles[0].SchedulerName, cfg.LeaderElection.ResourceName)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			objs := mustRender(t, values, tc.opts)
			want := slices.DeleteFunc(slices.Clone(baseInventory), func(s string) bool { return slices.Contains(tc.missing, s) })
			want = append(want, tc.extra...)
			sort.Strings(want)
			if diff := cmp.Diff(want, objectIDs(objs)); diff != "" {
				t.Errorf("objects (-want,+got):\n%s", diff)
			}
			raw := schedulerConfig(t, objs)
			// Every rendering is a configuration kube-scheduler and ArchFilter accept.
			cfg := checkSchedulerConfig(t, raw)
			checkPodSpec(t, one[*appsv1.Deployment](t, objs))
			if tc.check != nil {
				tc.check(t, objs, cfg)
			}
		})
	}
}

// checkPodSpec checks what no value may take away: the secure port's probes,
// the configuration mounted read-only, no architecture pin.
func checkPodSpec(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	p := d.Spec.Template.Spec
	c := p.Containers[0]
	for name, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Scheme != corev1.URISchemeHTTPS || probe.HTTPGet.Port.String() != "https" {
			t.Errorf("%s probe %+v, want HTTPS on the secure port", name, probe)
		}
	}
	if _, arch := p.NodeSelector["kubernetes.io/arch"]; arch {
		t.Error("nodeSelector pins kubernetes.io/arch: the image is multi-arch")
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/archfilter" && m.ReadOnly }) {
		t.Error("the configuration is not mounted read-only at /etc/archfilter")
	}
	if _, tag, _ := strings.Cut(strings.TrimPrefix(c.Image, "archfilter/"), ":"); strings.HasPrefix(tag, "latest") {
		t.Errorf("image %q: never the tag latest", c.Image)
	}
}

// TestRenderRejects: values the chart refuses, each with a message naming
// the value to fix.
func TestRenderRejects(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		opts         renderOpts
		want         []string
	}{
		{name: "latest", values: "image: {tag: latest}", want: []string{"image.tag", "latest"}},
		{name: "the retired k8s1.34 flavour", values: "image: {flavour: k8s1.34}",
			want: []string{"image.flavour: k8s1.34 is retired", "image.flavour: k8s1.35", "image.flavour: main", "docs/upgrading.md"}},
		{name: "two replicas without leader election", values: "leaderElection: {enabled: false}", want: []string{"leaderElection.enabled"}},
		{name: "replacement without leader election", values: "mode: replacement\nreplicas: 1\nleaderElection: {enabled: false}", want: []string{"leaderElection.enabled", "replacement"}},
		{name: "network policy without the API server's addresses", values: "networkPolicy: {enabled: true}", want: []string{"networkPolicy.apiServer.cidrs"}},
		{name: "ServiceMonitor without the Prometheus Operator", values: "metrics: {serviceMonitor: {enabled: true}}", want: []string{"metrics.serviceMonitor.enabled", "monitoring.coreos.com/v1/ServiceMonitor"}},
		{name: "PrometheusRule without the Prometheus Operator", values: "metrics: {prometheusRule: {enabled: true}}", want: []string{"metrics.prometheusRule.enabled", "monitoring.coreos.com/v1/PrometheusRule"}},
		{name: "ServiceMonitor without the Service", values: "metrics: {service: {enabled: false}, serviceMonitor: {enabled: true}}", opts: renderOpts{apiVersions: monitoringAPIs}, want: []string{"metrics.service.enabled"}},
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

// TestNotesWarnFlavourSkew: the install notes warn when the image's flavour
// does not support the cluster's minor (kube-scheduler may be one minor older
// than the API server, never newer), and only then.
func TestNotesWarnFlavourSkew(t *testing.T) {
	for _, tc := range []struct {
		flavour, minor string
		warn           bool
	}{
		{"main", "37", false}, {"main", "38", false}, {"main", "36", true}, {"main", "39", true},
		{"k8s1.35", "35", false}, {"k8s1.35", "36", false}, {"k8s1.35", "37", true}, {"k8s1.35", "38", true},
	} {
		t.Run(tc.flavour+" on 1."+tc.minor, func(t *testing.T) {
			// A repository of one's own: the default's warning (unpublished
			// images) is TestNotesWarnUnpublishedImages's.
			image := map[string]any{"flavour": tc.flavour, "repository": "registry.example.com/archfilter/archfilter-scheduler"}
			rel, err := dryRun(t, map[string]any{"image": image}, renderOpts{kubeMinor: tc.minor})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(rel.Info.Notes, "WARNING"); got != tc.warn {
				t.Errorf("warning %v, want %v; notes:\n%s", got, tc.warn, rel.Info.Notes)
			}
		})
	}
}

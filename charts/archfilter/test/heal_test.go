package charttest

import (
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// healInventory is what heal.enabled adds with the default values.
var healInventory = []string{
	"ClusterRole archfilter-heal",
	"ClusterRoleBinding archfilter-heal",
	"ConfigMap kube-system/archfilter-heal-args",
	"Deployment kube-system/archfilter-heal",
	"Role kube-system/archfilter-heal",
	"RoleBinding kube-system/archfilter-heal",
	"Service kube-system/archfilter-heal",
	"ServiceAccount kube-system/archfilter-heal",
}

// healRender is a rendering with heal.enabled: its objects and the
// companion's parts.
type healRender struct {
	objs       []k8sruntime.Object
	hooks      []string // the hooks' object IDs
	deployment *appsv1.Deployment
	flags      map[string]string
	argsFile   []byte
}

func renderHeal(t *testing.T, values string, opts renderOpts) healRender {
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
	r := healRender{objs: objs}
	for _, h := range rel.Hooks {
		o, err := decodeAll([]byte(h.Manifest))
		if err != nil {
			t.Fatalf("hook %s: %v", h.Path, err)
		}
		r.hooks = append(r.hooks, objectIDs(o)...)
	}
	for _, d := range of[*appsv1.Deployment](objs) {
		if strings.HasSuffix(d.Name, "-heal") {
			r.deployment = d
		}
	}
	if r.deployment == nil {
		t.Fatalf("no heal Deployment in %v", objectIDs(objs))
	}
	r.flags = flagsOf(r.deployment.Spec.Template.Spec.Containers[0].Args)
	for _, cm := range of[*corev1.ConfigMap](objs) {
		if strings.HasSuffix(cm.Name, "-heal-args") {
			r.argsFile = []byte(cm.Data["args.yaml"])
		}
	}
	return r
}

// TestRenderHeal renders heal.enabled, the misplaced-pod watch without the
// placement mode, with the values that change it, and checks what each
// changes and what none may: the companion's image in --mode=heal with the
// scheduler's ArchFilterArgs, no webhook, no gate, no certificate, no hook.
func TestRenderHeal(t *testing.T) {
	appVersion := loadChart(t).Metadata.AppVersion
	for _, tc := range []struct {
		name   string
		values string
		opts   renderOpts
		want   []string // the objects; nil: baseInventory + healInventory
		check  func(t *testing.T, r healRender)
	}{
		{
			name:   "beside the scheduler, reporting",
			values: "heal: {enabled: true}",
			check: func(t *testing.T, r healRender) {
				c := r.deployment.Spec.Template.Spec.Containers[0]
				if want := "archfilter/archfilter-placement:" + appVersion; c.Image != want {
					t.Errorf("image %q, want %q (the companion's)", c.Image, want)
				}
				want := map[string]string{
					"--mode": "heal", "--misplaced": "report", "--misplaced-evictions-per-minute": "2",
					"--args": "/etc/archfilter/heal/args.yaml", "--namespace": Namespace, "--service-name": "archfilter-heal",
					"--metrics-addr": ":8080", "--skip-scheduler-names": "archfilter-scheduler",
					"--leader-elect": "", "--lease-name": "archfilter-heal",
					"--tls-min-version": "VersionTLS12", "--tls-cipher-suites": strings.Join(aeadSuites, ","),
				}
				if diff := gocmp.Diff(want, r.flags); diff != "" {
					t.Errorf("flags (-want,+got):\n%s", diff)
				}
				if *r.deployment.Spec.Replicas != 1 {
					t.Errorf("replicas %d, want 1", *r.deployment.Spec.Replicas)
				}
				// One ArchFilterArgs: the companion's is the scheduler's.
				args := loadArgs(t, r.argsFile)
				sched, err := archFilterArgs(mustDecodeSchedulerConfig(t, r.objs))
				if err != nil {
					t.Fatal(err)
				}
				if diff := gocmp.Diff(sched["archfilter-scheduler"], args); diff != "" {
					t.Errorf("the companion's ArchFilterArgs differ from the scheduler's (-scheduler,+companion):\n%s", diff)
				}
				if grantsEviction(r.objs) {
					t.Error("pods/eviction granted in report mode")
				}
				for _, h := range r.hooks {
					if strings.Contains(h, "heal") || strings.Contains(h, "placement") {
						t.Errorf("hook %s: the heal mode leaves no gate or webhook behind to remove", h)
					}
				}
				for _, p := range c.Ports {
					if p.Name == "webhook" {
						t.Error("a webhook port: the heal mode serves no webhook")
					}
				}
				for _, cr := range of[*rbacv1.ClusterRole](r.objs) {
					if cr.Name != "archfilter-heal" {
						continue
					}
					for _, rule := range cr.Rules {
						if slices.Contains(rule.Resources, "pods") && slices.ContainsFunc(rule.Verbs, func(v string) bool { return v != "list" && v != "watch" }) ||
							slices.Contains(rule.Resources, "mutatingwebhookconfigurations") {
							t.Errorf("ClusterRole %s grants %v on %v: the heal mode only watches pods", cr.Name, rule.Verbs, rule.Resources)
						}
					}
				}
			},
		},
		{
			name:   "evicting: the flags, and the Eviction API in the ClusterRole",
			values: "heal: {enabled: true, mode: evict, evictionsPerMinute: 0.5}",
			check: func(t *testing.T, r healRender) {
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
			name:   "alone, with the values a scheduler-less install and pull secrets in one namespace take",
			values: "scheduler: {enabled: false}\nheal: {enabled: true, replicas: 2, leaderElection: {leaseName: my-heal}}\narchFilterArgs: {secretNamespaces: [team-a]}",
			want: append(slices.Clone(healInventory), "ClusterRole archfilter-scheduler:metrics-reader", "PodDisruptionBudget kube-system/archfilter-heal",
				"Role team-a/archfilter-heal:pull-secrets", "RoleBinding team-a/archfilter-heal:pull-secrets"),
			check: func(t *testing.T, r healRender) {
				if r.flags["--lease-name"] != "my-heal" || *r.deployment.Spec.Replicas != 2 {
					t.Errorf("--lease-name=%q, replicas %d; want my-heal and 2", r.flags["--lease-name"], *r.deployment.Spec.Replicas)
				}
				for _, cr := range of[*rbacv1.ClusterRole](r.objs) {
					for _, rule := range cr.Rules {
						if slices.Contains(rule.Resources, "secrets") {
							t.Errorf("ClusterRole %s grants %v on secrets with secretNamespaces", cr.Name, rule.Verbs)
						}
					}
				}
				for _, role := range of[*rbacv1.Role](r.objs) {
					if role.Name == "archfilter-heal" && !slices.ContainsFunc(role.Rules, func(p rbacv1.PolicyRule) bool { return slices.Contains(p.ResourceNames, "my-heal") }) {
						t.Errorf("Role %s does not name the Lease my-heal: %v", role.Name, role.Rules)
					}
				}
				if got := loadArgs(t, r.argsFile).SecretNamespaces; !slices.Equal(got, []string{"team-a"}) {
					t.Errorf("the companion's secretNamespaces %v, want [team-a]", got)
				}
			},
		},
		{
			name:   "without leader election: no Lease",
			values: "heal: {enabled: true, leaderElection: {enabled: false}}",
			want:   without(append(slices.Clone(baseInventory), healInventory...), "Role kube-system/archfilter-heal", "RoleBinding kube-system/archfilter-heal"),
			check: func(t *testing.T, r healRender) {
				if _, ok := r.flags["--leader-elect"]; ok {
					t.Error("--leader-elect with leaderElection off")
				}
			},
		},
		{
			name:   "fullnameOverride names every object",
			values: "fullnameOverride: af\nheal: {enabled: true}",
			check: func(t *testing.T, r healRender) {
				if r.deployment.Name != "af-heal" || r.flags["--lease-name"] != "af-heal" || r.deployment.Spec.Template.Spec.ServiceAccountName != "af-heal" {
					t.Errorf("Deployment %s, --lease-name=%s, ServiceAccount %s; want af-heal", r.deployment.Name, r.flags["--lease-name"], r.deployment.Spec.Template.Spec.ServiceAccountName)
				}
			},
			want: []string{
				"ClusterRole af", "ClusterRole af-heal", "ClusterRole af:metrics-reader", "ClusterRoleBinding af", "ClusterRoleBinding af-heal",
				"ClusterRoleBinding af:kube-scheduler", "ClusterRoleBinding af:volume-scheduler", "ConfigMap kube-system/af-config", "ConfigMap kube-system/af-heal-args",
				"Deployment kube-system/af", "Deployment kube-system/af-heal", "PodDisruptionBudget kube-system/af", "Role kube-system/af-heal",
				"Role kube-system/af:leader-election", "RoleBinding kube-system/af-heal", "RoleBinding kube-system/af:extension-apiserver-authentication-reader",
				"RoleBinding kube-system/af:leader-election", "Service kube-system/af-heal", "Service kube-system/af-metrics", "ServiceAccount kube-system/af",
				"ServiceAccount kube-system/af-heal",
			},
		},
		{
			name:   "monitoring: its ServiceMonitor, and the misplaced-pod alerts without the placement mode's",
			values: "heal: {enabled: true}\nmetrics: {serviceMonitor: {enabled: true}, prometheusRule: {enabled: true}}",
			opts:   renderOpts{apiVersions: monitoringAPIs},
			want: append(append(slices.Clone(baseInventory), healInventory...),
				"PrometheusRule kube-system/archfilter-scheduler", "ServiceMonitor kube-system/archfilter-heal", "ServiceMonitor kube-system/archfilter-scheduler"),
			check: func(t *testing.T, r healRender) {
				var groups []string
				for _, u := range of[*unstructured.Unstructured](r.objs) {
					if u.GetKind() != "PrometheusRule" {
						continue
					}
					gs, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
					for _, g := range gs {
						groups = append(groups, g.(map[string]any)["name"].(string))
					}
				}
				if want := []string{"archfilter", "archfilter-misplaced"}; !slices.Equal(groups, want) {
					t.Errorf("PrometheusRule groups %v, want %v", groups, want)
				}
			},
		},
		{
			name:   "network policy: the API server, registries and DNS out, metrics in",
			values: "heal: {enabled: true}\nnetworkPolicy: {enabled: true, apiServer: {cidrs: [10.0.0.1/32]}}",
			want:   append(append(slices.Clone(baseInventory), healInventory...), "NetworkPolicy kube-system/archfilter-heal", "NetworkPolicy kube-system/archfilter-scheduler"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := renderHeal(t, tc.values, tc.opts)
			want := tc.want
			if want == nil {
				want = append(slices.Clone(baseInventory), healInventory...)
			}
			slices.Sort(want)
			if diff := gocmp.Diff(want, objectIDs(r.objs)); diff != "" {
				t.Errorf("objects (-want,+got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestRenderHealRejects: the combinations heal.enabled cannot work with are
// refused, naming the value to change.
func TestRenderHealRejects(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		want         []string
	}{
		{name: "beside the placement companion, which runs the watch itself", values: "heal: {enabled: true}\nplacement: {enabled: true}", want: []string{"heal.enabled", "placement.misplaced.mode"}},
		{name: "an unknown mode", values: "heal: {enabled: true, mode: off}", want: []string{"/heal/mode"}},
		{name: "no evictions per minute", values: "heal: {enabled: true, mode: evict, evictionsPerMinute: 0}", want: []string{"/heal/evictionsPerMinute"}},
		{name: "replicas without leader election", values: "heal: {enabled: true, replicas: 2, leaderElection: {enabled: false}}", want: []string{"heal.leaderElection.enabled"}},
		{name: "nothing to install", values: "scheduler: {enabled: false}", want: []string{"scheduler.enabled", "placement.enabled", "heal.enabled"}},
		{
			name:   "the scheduler's docker config not mounted into the companion",
			values: "heal: {enabled: true}\narchFilterArgs: {dockerConfigFile: /etc/archfilter-docker/config.json}\nextraVolumes: [{name: d, secret: {secretName: s}}]\nextraVolumeMounts: [{name: d, mountPath: /etc/archfilter-docker}]",
			want:   []string{"heal.extraVolumeMounts", "archFilterArgs.dockerConfigFile", "heal companion"},
		},
		{
			name:   "the scheduler's cloud identity, not the companion's",
			values: "heal: {enabled: true}\nserviceAccount: {annotations: {iam.gke.io/gcp-service-account: archfilter@p.iam.gserviceaccount.com}}",
			want:   []string{"heal.serviceAccount.annotations", "iam.gke.io/gcp-service-account"},
		},
		{
			name:   "the scheduler's proxy, not the companion's",
			values: "heal: {enabled: true}\nenv: [{name: HTTPS_PROXY, value: 'http://proxy:3128'}]",
			want:   []string{"heal.env", "HTTPS_PROXY"},
		},
		{name: "an unknown value", values: "heal: {enabled: true, webhook: {timeoutSeconds: 5}}", want: []string{"heal", "webhook"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			_, err := render(t, values, renderOpts{})
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

// TestHealMatchesOverlay: installed into kube-system, the chart's heal
// companion has exactly manifests/overlays/heal's RBAC (report mode; the
// reference for what the watch needs) and runs as the overlay's does.
func TestHealMatchesOverlay(t *testing.T) {
	var overlay []k8sruntime.Object
	for _, f := range []string{"rbac.yaml", "deployment.yaml", "service.yaml"} {
		o, err := decodeAll(readFile(t, "manifests/overlays/heal/"+f))
		if err != nil {
			t.Fatalf("manifests/overlays/heal/%s: %v", f, err)
		}
		overlay = append(overlay, o...)
	}
	r := renderHeal(t, "scheduler: {enabled: false}\nheal: {enabled: true}", renderOpts{})
	chartRBAC := rbacOf(r.objs)
	delete(chartRBAC, "ClusterRole archfilter-scheduler:metrics-reader")
	if diff := gocmp.Diff(rbacOf(overlay), chartRBAC); diff != "" {
		t.Errorf("RBAC (-manifests/overlays/heal,+chart):\n%s", diff)
	}
	d := one[*appsv1.Deployment](t, overlay)
	want, got := d.Spec.Template.Spec, r.deployment.Spec.Template.Spec
	wantFlags := flagsOf(want.Containers[0].Args)
	for _, f := range []string{"--mode", "--misplaced", "--namespace", "--service-name", "--metrics-addr", "--leader-elect", "--tls-min-version", "--tls-cipher-suites"} {
		if wantFlags[f] != r.flags[f] {
			t.Errorf("%s: overlay %q, chart %q", f, wantFlags[f], r.flags[f])
		}
	}
	for _, c := range []struct {
		what      string
		want, got any
	}{
		{"pod securityContext", want.SecurityContext, got.SecurityContext},
		{"nodeSelector", want.NodeSelector, got.NodeSelector},
		{"container securityContext", want.Containers[0].SecurityContext.Capabilities, got.Containers[0].SecurityContext.Capabilities},
		{"ports", want.Containers[0].Ports[0].ContainerPort, got.Containers[0].Ports[0].ContainerPort},
		{"probes", want.Containers[0].LivenessProbe.HTTPGet, got.Containers[0].LivenessProbe.HTTPGet},
		{"replicas", *d.Spec.Replicas, *r.deployment.Spec.Replicas},
	} {
		if diff := gocmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("Deployment %s (-overlay,+chart):\n%s", c.what, diff)
		}
	}
}

// TestPrometheusRuleGroups: the misplaced-pod alerts are rendered where a
// companion runs the watch (heal.enabled, or placement.misplaced.mode report
// or evict), and only there.
func TestPrometheusRuleGroups(t *testing.T) {
	for _, tc := range []struct {
		values string
		want   []string
	}{
		{"scheduler: {enabled: true}", []string{"archfilter"}},
		{"placement: {enabled: true}", []string{"archfilter", "archfilter-placement"}},
		{"placement: {enabled: true, misplaced: {mode: report}}", []string{"archfilter", "archfilter-placement", "archfilter-misplaced"}},
		{"scheduler: {enabled: false}\nheal: {enabled: true}", []string{"archfilter-misplaced"}},
	} {
		var values map[string]any
		if err := yaml.Unmarshal([]byte(tc.values+"\nmetrics: {prometheusRule: {enabled: true}}"), &values); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, u := range of[*unstructured.Unstructured](mustRender(t, values, renderOpts{apiVersions: monitoringAPIs})) {
			if u.GetKind() != "PrometheusRule" {
				continue
			}
			gs, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
			for _, g := range gs {
				got = append(got, g.(map[string]any)["name"].(string))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: PrometheusRule groups %v, want %v", tc.values, got, tc.want)
		}
	}
}

// TestRenderHotStandby: the placement companion's standby resolves gated pods'
// images unless placement.leaderElection.hotStandby is off
// (--hot-standby=false, the companion's default being on).
func TestRenderHotStandby(t *testing.T) {
	for _, tc := range []struct {
		values string
		want   bool // --hot-standby=false given
	}{
		{"placement: {enabled: true}", false},
		{"placement: {enabled: true, leaderElection: {hotStandby: false}}", true},
		{"placement: {enabled: true, replicas: 1, leaderElection: {enabled: false, hotStandby: false}}", false},
	} {
		r := renderPlacement(t, tc.values, renderOpts{})
		v, ok := r.flags["--hot-standby"]
		if got := ok && v == "false"; got != tc.want {
			t.Errorf("%s: --hot-standby=false given: %v, want %v (flags %v)", tc.values, got, tc.want, r.flags)
		}
	}
}

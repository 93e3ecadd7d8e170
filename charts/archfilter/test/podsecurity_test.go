package charttest

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/test/manifests/podsecurity"
)

// TestRenderPodSecurity: every workload the chart renders, hooks included
// (the scheduler, the placement companion, its uninstall Job), runs hardened
// in every mode (test/manifests/podsecurity: non-root with a non-zero user,
// read-only root filesystem, no privilege escalation, seccomp RuntimeDefault,
// every capability dropped, nothing privileged, no host namespaces, ports or
// paths), and the check catches each of those fields taken away from each
// container. The kustomize overlays pass the same check (cmd/scheduler and
// test/e2e TestManifestsPodSecurity). credentialProviders mounts the node's
// provider binaries read-only from hostPath: the one exception, which Pod
// Security Admission's restricted level refuses (baseline admits it).
func TestRenderPodSecurity(t *testing.T) {
	const providers = "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec"
	for _, tc := range []struct {
		name, values string
		want         []string
		ex           podsecurity.Exceptions
	}{
		{name: "secondary", values: "{}", want: []string{"Deployment kube-system/archfilter-scheduler", "Job kube-system/archfilter-scheduler-uninstall"}},
		{name: "replacement", values: "mode: replacement", want: []string{"Deployment kube-system/archfilter-scheduler", "Job kube-system/archfilter-scheduler-uninstall"}},
		{
			name: "placement beside the scheduler", values: "placement: {enabled: true}",
			want: []string{"Deployment kube-system/archfilter-placement", "Deployment kube-system/archfilter-scheduler", "Job kube-system/archfilter-placement-uninstall", "Job kube-system/archfilter-scheduler-uninstall"},
		},
		{
			name: "placement alone", values: "scheduler: {enabled: false}\nplacement: {enabled: true, replicas: 1, leaderElection: {enabled: false}}",
			want: []string{"Deployment kube-system/archfilter-placement", "Job kube-system/archfilter-placement-uninstall"},
		},
		{
			name:   "credential providers",
			values: "placement: {enabled: true}\ncredentialProviders: {enabled: true, hostPath: " + providers + ", config: {apiVersion: kubelet.config.k8s.io/v1, kind: CredentialProviderConfig, providers: [{name: p, apiVersion: credentialprovider.kubelet.k8s.io/v1, matchImages: [x], defaultCacheDuration: 1m}]}}",
			want:   []string{"Deployment kube-system/archfilter-placement", "Deployment kube-system/archfilter-scheduler", "Job kube-system/archfilter-placement-uninstall", "Job kube-system/archfilter-scheduler-uninstall"},
			ex:     podsecurity.Exceptions{HostPaths: []string{providers}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			rel, err := dryRun(t, values, renderOpts{})
			if err != nil {
				t.Fatal(err)
			}
			objs, err := decodeAll([]byte(rel.Manifest))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range rel.Hooks {
				o, err := decodeAll([]byte(h.Manifest))
				if err != nil {
					t.Fatalf("hook %s: %v", h.Path, err)
				}
				objs = append(objs, o...)
			}
			var got []string
			for _, w := range podsecurity.Workloads(objs) {
				got = append(got, w.ID)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("workloads %v, want %v", got, tc.want)
			}
			if err := podsecurity.Check(objs, tc.ex); err != nil {
				t.Error(err)
			}
			if err := podsecurity.CheckMutations(objs, tc.ex); err != nil {
				t.Error(err)
			}
			if tc.ex.HostPaths != nil {
				// Without the exception the host path is what fails.
				if err := podsecurity.Check(objs, podsecurity.Exceptions{}); err == nil {
					t.Error("the credential providers' hostPath passes without an exception")
				}
			}
		})
	}
}

// aeadSuites are the chart's default tls.cipherSuites, the companion's
// defaults (internal/placement/serving.SecureCipherSuites).
var aeadSuites = []string{
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
}

// TestRenderTLS: the scheduler and the companion get the same TLS flags from
// values tls; the schema refuses TLS 1.1 and a CBC suite.
func TestRenderTLS(t *testing.T) {
	r := renderPlacement(t, "placement: {enabled: true}\ntls: {minVersion: VersionTLS13, cipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]}", renderOpts{})
	sched := flagsOf(one[*appsv1.Deployment](t, slices.DeleteFunc(slices.Clone(r.objs), func(o k8sruntime.Object) bool {
		d, ok := o.(*appsv1.Deployment)
		return ok && d.Name == "archfilter-placement"
	})).Spec.Template.Spec.Containers[0].Args)
	for who, flags := range map[string]map[string]string{"scheduler": sched, "companion": r.flags} {
		if flags["--tls-min-version"] != "VersionTLS13" || flags["--tls-cipher-suites"] != "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" {
			t.Errorf("%s: --tls-min-version %q --tls-cipher-suites %q, want the values'", who, flags["--tls-min-version"], flags["--tls-cipher-suites"])
		}
	}
	for _, values := range []map[string]any{
		{"tls": map[string]any{"minVersion": "VersionTLS11"}},
		{"tls": map[string]any{"cipherSuites": []any{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"}}},
	} {
		if _, err := render(t, values, renderOpts{}); err == nil {
			t.Errorf("%v rendered, want the schema to refuse it", values)
		}
	}
}

package warnings

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

type fakeResolver map[string]any

func (f fakeResolver) Resolve(_ context.Context, req resolver.Request) resolver.Result {
	switch v := f[req.Image].(type) {
	case string:
		set, err := platform.ParseList(v)
		if err != nil {
			panic(err)
		}
		return resolver.Result{Platforms: set}
	case error:
		return resolver.Result{Err: v}
	}
	return resolver.Result{Err: context.DeadlineExceeded}
}

type noCredentials struct{}

func (noCredentials) ForPod(*v1.Pod) resolver.Credentials { return nil }

func handler(t *testing.T, nodes []platform.NodePlatform, objs ...*policyv1alpha1.ArchFilterPolicy) *Handler {
	t.Helper()
	s, err := decision.NewSettings(&config.ArchFilterArgs{FailurePolicy: config.FailurePolicyIgnore, DaemonSetPolicy: config.DaemonSetPolicySkip,
		ExcludedNamespaces: []string{"kube-system"}, Policies: config.PolicyArgs{Enabled: true, AllowedOverrides: config.PolicyFields}})
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*decision.Policy
	for _, o := range objs {
		p, err := decision.ParsePolicy(o)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, p)
	}
	decision.SortPolicies(parsed)
	return &Handler{
		Settings: s,
		Policies: func(ns string) []*decision.Policy {
			if ns == "team" {
				return parsed
			}
			return nil
		},
		Resolver: fakeResolver{
			"amd":   "linux/amd64",
			"arm":   "linux/arm64",
			"s390x": "linux/s390x",
			"multi": "linux/amd64,linux/arm64",
			"gone":  errors.New("registry.example: NotFound"),
		},
		Credentials:   noCredentials{},
		NodePlatforms: func() []platform.NodePlatform { return nodes },
		Logger:        klog.Background(),
	}
}

func template(images ...string) v1.PodTemplateSpec {
	t := v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	for _, img := range images {
		t.Spec.Containers = append(t.Spec.Containers, v1.Container{Name: img, Image: img})
	}
	return t
}

func request(t *testing.T, ns string, op admissionv1.Operation, obj runtime.Object) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	resource := map[string]string{"Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets", "ReplicaSet": "replicasets", "Job": "jobs", "CronJob": "cronjobs", "ConfigMap": "configmaps"}[gvk.Kind]
	return &admissionv1.AdmissionRequest{
		Operation: op, Namespace: ns, Kind: metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource: metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource},
		Object:   runtime.RawExtension{Raw: raw},
	}
}

func deployment(name string, tmpl v1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{Template: tmpl}}
}

func TestWarnings(t *testing.T) {
	amd64 := platform.NodePlatform{OS: "linux", Architecture: "amd64"}
	arm64 := platform.NodePlatform{OS: "linux", Architecture: "arm64"}
	armOnly := &policyv1alpha1.ArchFilterPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "arm-only"}, Spec: policyv1alpha1.ArchFilterPolicySpec{AllowedPlatforms: []string{"linux/arm64"}}}
	cron := &batchv1.CronJob{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"}, ObjectMeta: metav1.ObjectMeta{Name: "nightly"}}
	cron.Spec.JobTemplate.Spec.Template = template("s390x")
	ds := &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}, ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1.DaemonSetSpec{Template: template("s390x")}}
	skipped := template("s390x")
	skipped.Annotations = map[string]string{annotations.Skip: "true"}
	for _, tc := range []struct {
		name     string
		ns       string
		op       admissionv1.Operation
		obj      runtime.Object
		policies []*policyv1alpha1.ArchFilterPolicy
		nodes    []platform.NodePlatform
		want     []string // substrings of the one warning; nil: no warning
	}{
		{name: "images no node runs", ns: "shop", op: admissionv1.Create, obj: deployment("web", template("s390x")), nodes: []platform.NodePlatform{amd64, arm64},
			want: []string{"Deployment shop/web", "linux/s390x", "no node of the cluster", "linux/amd64, linux/arm64"}},
		{name: "images that share no platform", ns: "shop", op: admissionv1.Update, obj: deployment("web", template("amd", "arm")), nodes: []platform.NodePlatform{amd64, arm64},
			want: []string{decision.ReasonNoCommonPlatform}},
		{name: "images a policy allows on none", ns: "team", op: admissionv1.Create, obj: deployment("web", template("amd")), policies: []*policyv1alpha1.ArchFilterPolicy{armOnly},
			nodes: []platform.NodePlatform{amd64, arm64}, want: []string{"ArchFilterPolicy team/arm-only"}},
		{name: "a CronJob's job template", ns: "shop", op: admissionv1.Create, obj: cron, nodes: []platform.NodePlatform{amd64}, want: []string{"CronJob shop/nightly", "linux/s390x"}},
		{name: "a DaemonSet whose images run on no node", ns: "team", op: admissionv1.Create, obj: ds, policies: []*policyv1alpha1.ArchFilterPolicy{armOnly},
			nodes: []platform.NodePlatform{amd64}, want: []string{"DaemonSet team/agent", "linux/s390x"}},
		{name: "images that run somewhere", ns: "shop", op: admissionv1.Create, obj: deployment("web", template("multi")), nodes: []platform.NodePlatform{arm64}},
		{name: "an image that does not resolve: say nothing", ns: "shop", op: admissionv1.Create, obj: deployment("web", template("s390x", "gone")), nodes: []platform.NodePlatform{amd64}},
		{name: "an image not answered within the budget: say nothing", ns: "shop", op: admissionv1.Create, obj: deployment("web", template("slow")), nodes: []platform.NodePlatform{amd64}},
		{name: "no node known: say nothing", ns: "shop", op: admissionv1.Create, obj: deployment("web", template("s390x"))},
		{name: "opted out", ns: "shop", op: admissionv1.Create, obj: deployment("web", skipped), nodes: []platform.NodePlatform{amd64}},
		{name: "excluded namespace", ns: "kube-system", op: admissionv1.Create, obj: deployment("web", template("s390x")), nodes: []platform.NodePlatform{amd64}},
		{name: "a delete", ns: "shop", op: admissionv1.Delete, obj: deployment("web", template("s390x")), nodes: []platform.NodePlatform{amd64}},
		{name: "not a workload", ns: "shop", op: admissionv1.Create, obj: &v1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}, nodes: []platform.NodePlatform{amd64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := handler(t, tc.nodes, tc.policies...)
			got := h.Warnings(context.Background(), request(t, tc.ns, tc.op, tc.obj))
			if tc.want == nil {
				if len(got) != 0 {
					t.Errorf("warnings %q, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("warnings %q, want one", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("warning %q does not say %q", got[0], w)
				}
			}
			if len(got[0]) > maxWarning {
				t.Errorf("warning of %d characters", len(got[0]))
			}
		})
	}
}

// TestWarningsLintAnnotations: the mistakes in a workload's archfilter.io/
// annotations are warned about at apply, in package decision's words (as the
// plugin's events and kubectl archfilter check say them), beside the judgement of
// its images.
func TestWarningsLintAnnotations(t *testing.T) {
	amd64 := platform.NodePlatform{OS: "linux", Architecture: "amd64"}
	tmpl := template("multi")
	tmpl.Annotations = map[string]string{"archfilter.io/platfroms": "linux/arm64", annotations.Skip: "yes"}
	d := deployment("web", tmpl)
	d.Annotations = map[string]string{annotations.Skip: "true"}
	got := handler(t, []platform.NodePlatform{amd64}).Warnings(context.Background(), request(t, "shop", admissionv1.Create, d))
	var want []string
	for _, f := range append(decision.LintWorkloadAnnotations("Deployment", d.Annotations), decision.LintAnnotations(tmpl.Annotations)...) {
		want = append(want, truncate("archfilter: Deployment shop/web: "+f.Message))
	}
	if len(want) != 3 {
		t.Fatalf("the lint found %d mistakes, want 3: %q", len(want), want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want,+got):\n%s", diff)
	}
	for _, hint := range []string{"move it to spec.template.metadata.annotations", "did you mean archfilter.io/platforms?", `is not true or false`} {
		if !strings.Contains(strings.Join(got, "\n"), hint) {
			t.Errorf("no warning says %q: %q", hint, got)
		}
	}

	// An unknown architecture declared for a template whose images the nodes run: the
	// lint's warning and the judgement's (no node runs linux/arm46).
	tmpl = template("amd")
	tmpl.Annotations = map[string]string{annotations.Platforms: "linux/arm46"}
	got = handler(t, []platform.NodePlatform{amd64}).Warnings(context.Background(), request(t, "shop", admissionv1.Create, deployment("web", tmpl)))
	if len(got) != 2 || !strings.Contains(got[0], "did you mean linux/arm64?") || !strings.Contains(got[1], "no node of the cluster") {
		t.Errorf("warnings %q: want the lint's (did you mean linux/arm64?) and the judgement's", got)
	}
}

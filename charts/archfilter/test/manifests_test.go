package charttest

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// baseObjects decodes the files of manifests/base (the kustomize base the
// overlays apply), without its ConfigMap generator.
func baseObjects(t *testing.T) []k8sruntime.Object {
	t.Helper()
	var objs []k8sruntime.Object
	for _, f := range []string{"serviceaccount.yaml", "clusterrole/clusterrole.yaml", "rbac.yaml", "deployment.yaml", "service.yaml"} {
		o, err := decodeAll(readFile(t, "manifests/base/"+f))
		if err != nil {
			t.Fatalf("manifests/base/%s: %v", f, err)
		}
		objs = append(objs, o...)
	}
	return objs
}

// rbacOf reduces the RBAC objects to what grants access: rules, role
// references and subjects, by object ID.
func rbacOf(objs []k8sruntime.Object) map[string]any {
	out := map[string]any{}
	for _, o := range objs {
		switch v := o.(type) {
		case *rbacv1.ClusterRole:
			out[id(o)] = v.Rules
		case *rbacv1.Role:
			out[id(o)] = v.Rules
		case *rbacv1.ClusterRoleBinding:
			out[id(o)] = []any{v.RoleRef, v.Subjects}
		case *rbacv1.RoleBinding:
			out[id(o)] = []any{v.RoleRef, v.Subjects}
		}
	}
	return out
}

// TestMatchesManifestsBase: installed into kube-system with the default
// values, the chart grants exactly manifests/base's RBAC (plus the metrics
// reader, which grants the scraper, not the scheduler) and runs the pod the
// base runs: same image, security, probes, ports, resources and placement.
func TestMatchesManifestsBase(t *testing.T) {
	base := baseObjects(t)
	chart := mustRender(t, nil, renderOpts{})

	chartRBAC := rbacOf(chart)
	for id := range chartRBAC {
		if strings.HasSuffix(id, ":metrics-reader") {
			delete(chartRBAC, id)
		}
	}
	if diff := cmp.Diff(rbacOf(base), chartRBAC); diff != "" {
		t.Errorf("RBAC (-manifests/base,+chart):\n%s", diff)
	}

	want, got := one[*appsv1.Deployment](t, base).Spec.Template.Spec, one[*appsv1.Deployment](t, chart).Spec.Template.Spec
	wc, gc := want.Containers[0], got.Containers[0]
	for _, c := range []struct {
		what      string
		want, got any
	}{
		{"image", wc.Image, gc.Image},
		{"args", wc.Args, gc.Args},
		{"ports", wc.Ports, gc.Ports},
		{"startupProbe", wc.StartupProbe, gc.StartupProbe},
		{"livenessProbe", wc.LivenessProbe, gc.LivenessProbe},
		{"readinessProbe", wc.ReadinessProbe, gc.ReadinessProbe},
		{"resources", wc.Resources, gc.Resources},
		{"container securityContext", wc.SecurityContext, gc.SecurityContext},
		{"volumeMounts", wc.VolumeMounts, gc.VolumeMounts},
		{"pod securityContext", want.SecurityContext, got.SecurityContext},
		{"serviceAccountName", want.ServiceAccountName, got.ServiceAccountName},
		{"priorityClassName", want.PriorityClassName, got.PriorityClassName},
		{"nodeSelector", want.NodeSelector, got.NodeSelector},
		{"tolerations", want.Tolerations, got.Tolerations},
		{"volumes", volumeSources(want.Volumes), volumeSources(got.Volumes)},
	} {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("Deployment %s (-manifests/base,+chart):\n%s", c.what, diff)
		}
	}
	if w, g := len(want.TopologySpreadConstraints), len(got.TopologySpreadConstraints); w != g {
		t.Errorf("topologySpreadConstraints: base %d, chart %d", w, g)
	}
	if wd, gd := one[*appsv1.Deployment](t, base).Spec, one[*appsv1.Deployment](t, chart).Spec; *wd.Replicas != *gd.Replicas ||
		!cmp.Equal(wd.Strategy, gd.Strategy) {
		t.Errorf("replicas/strategy: base %d %+v, chart %d %+v", *wd.Replicas, wd.Strategy, *gd.Replicas, gd.Strategy)
	}
	ws, gs := one[*corev1.Service](t, base).Spec.Ports, one[*corev1.Service](t, chart).Spec.Ports
	if diff := cmp.Diff(ws, gs); diff != "" {
		t.Errorf("metrics Service ports (-manifests/base,+chart):\n%s", diff)
	}
}

// volumeSources drops the generated ConfigMap's name (kustomize adds a hash,
// the chart a suffix of its own), keeping everything else.
func volumeSources(vols []corev1.Volume) []corev1.Volume {
	out := slices.Clone(vols)
	for i := range out {
		if out[i].ConfigMap != nil {
			cm := *out[i].ConfigMap
			cm.Name = "<config>"
			out[i].ConfigMap = &cm
		}
	}
	return out
}

package webhook

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/placement"
)

func TestAdmit(t *testing.T) {
	gate := v1.PodSchedulingGate{Name: placement.GateName}
	other := v1.PodSchedulingGate{Name: "example.com/other"}
	pod := func(mutate ...func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img"}}}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	daemonSetPod := func(p *v1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: ptr.To(true)}}
	}
	for _, tc := range []struct {
		name         string
		namespace    string
		op           admissionv1.Operation
		pod          *v1.Pod
		policy       config.DaemonSetPolicy
		selector     string                 // namespaceSelector, as a label selector string
		wantGates    []v1.PodSchedulingGate // nil: no patch
		wantWarnings int
	}{
		{name: "new pod is gated", namespace: "apps", op: admissionv1.Create, pod: pod(), wantGates: []v1.PodSchedulingGate{gate}},
		{name: "gate appended to others", namespace: "apps", op: admissionv1.Create, pod: pod(func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{other} }), wantGates: []v1.PodSchedulingGate{other, gate}},
		{name: "excluded namespace", namespace: "kube-system", op: admissionv1.Create, pod: pod()},
		{name: "update is not gated", namespace: "apps", op: admissionv1.Update, pod: pod()},
		{name: "bound pod", namespace: "apps", op: admissionv1.Create, pod: pod(func(p *v1.Pod) { p.Spec.NodeName = "n" })},
		{name: "archfilter's scheduler", namespace: "apps", op: admissionv1.Create, pod: pod(func(p *v1.Pod) { p.Spec.SchedulerName = "archfilter-scheduler" })},
		{name: "already gated", namespace: "apps", op: admissionv1.Create, pod: pod(func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{gate} })},
		{name: "skip annotation", namespace: "apps", op: admissionv1.Create, pod: pod(func(p *v1.Pod) { p.Annotations = map[string]string{annotations.Skip: "true"} })},
		{name: "invalid skip annotation: gated, with a warning", namespace: "apps", op: admissionv1.Create, pod: pod(func(p *v1.Pod) { p.Annotations = map[string]string{annotations.Skip: "yes"} }), wantGates: []v1.PodSchedulingGate{gate}, wantWarnings: 1},
		{name: "misspelt key: gated, with a warning", namespace: "apps", op: admissionv1.Create, pod: pod(func(p *v1.Pod) { p.Annotations = map[string]string{"archfilter.io/skp": "true"} }), wantGates: []v1.PodSchedulingGate{gate}, wantWarnings: 1},
		{name: "unknown architecture and a misspelt key: two warnings", namespace: "apps", op: admissionv1.Create, pod: pod(func(p *v1.Pod) {
			p.Annotations = map[string]string{annotations.Platforms: "linux/arm46", "archfilter.io/platfroms": "linux/arm64"}
		}), wantGates: []v1.PodSchedulingGate{gate}, wantWarnings: 2},
		{name: "DaemonSet pod under daemonSetPolicy Skip", namespace: "apps", op: admissionv1.Create, pod: pod(daemonSetPod), policy: config.DaemonSetPolicySkip},
		{name: "DaemonSet pod under daemonSetPolicy Enforce", namespace: "apps", op: admissionv1.Create, pod: pod(daemonSetPod), policy: config.DaemonSetPolicyEnforce, wantGates: []v1.PodSchedulingGate{gate}},
		{name: "namespace selected", namespace: "apps", op: admissionv1.Create, pod: pod(), selector: "team=shop", wantGates: []v1.PodSchedulingGate{gate}},
		{name: "namespace not selected", namespace: "apps", op: admissionv1.Create, pod: pod(), selector: "team=payments"},
		{name: "namespace unknown", namespace: "new", op: admissionv1.Create, pod: pod(), selector: "team=shop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			settings := &decision.Settings{ExcludedNamespaces: sets.New("kube-system"), Schedulers: sets.New("archfilter-scheduler"), DaemonSetPolicy: cmp.Or(tc.policy, config.DaemonSetPolicySkip)}
			if tc.selector != "" {
				sel, err := labels.Parse(tc.selector)
				if err != nil {
					t.Fatal(err)
				}
				settings.NamespaceSelector = sel
			}
			namespaces := func(name string) (labels.Set, bool) {
				l, ok := map[string]labels.Set{"apps": {"team": "shop"}, "kube-system": {}}[name]
				return l, ok
			}
			h := &Handler{Settings: settings, Namespaces: namespaces, Logger: logger}
			raw, err := json.Marshal(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			review := admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
				Request: &admissionv1.AdmissionRequest{
					UID: "uid-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
					Namespace: tc.namespace, Operation: tc.op, Object: runtime.RawExtension{Raw: raw},
				},
			}
			body, _ := json.Marshal(review)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			if out.Response == nil || !out.Response.Allowed || out.Response.UID != "uid-1" {
				t.Fatalf("response %+v, want allowed with the request's UID", out.Response)
			}
			if len(out.Response.Warnings) != tc.wantWarnings {
				t.Errorf("warnings %q, want %d", out.Response.Warnings, tc.wantWarnings)
			}
			if tc.wantGates == nil {
				if out.Response.Patch != nil {
					t.Fatalf("patch %s, want none", out.Response.Patch)
				}
				return
			}
			got := applyGatePatch(t, tc.pod, out.Response.Patch)
			if diff := gocmp.Diff(tc.wantGates, got); diff != "" {
				t.Errorf("gates (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestServeHTTPBadRequest(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	h := &Handler{Logger: logger}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader([]byte("{not json"))))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("status %d, want %d", rec.Code, http.StatusBadRequest)
	}
}

func TestConfiguration(t *testing.T) {
	r := Registration{Name: "cfg", URL: "https://127.0.0.1:9443", ExcludedNamespaces: sets.New("kube-system", "archfilter-system"),
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}}}
	c := r.Configuration([]byte("ca"))
	w := c.Webhooks[0]
	if got := *w.ClientConfig.URL; got != "https://127.0.0.1:9443"+Path {
		t.Errorf("URL %s", got)
	}
	if *w.FailurePolicy != "Ignore" {
		t.Errorf("failurePolicy %s, want Ignore", *w.FailurePolicy)
	}
	if diff := gocmp.Diff([]string{"archfilter-system", "kube-system"}, w.NamespaceSelector.MatchExpressions[0].Values); diff != "" {
		t.Errorf("excluded namespaces (-want,+got):\n%s", diff)
	}
	// namespaceSelector is ANDed in: the apiserver calls the webhook for the selected namespaces only.
	sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels labels.Set
		want   bool
	}{
		{labels.Set{"kubernetes.io/metadata.name": "apps", "team": "shop", "tier": "web"}, true},
		{labels.Set{"kubernetes.io/metadata.name": "apps", "team": "shop"}, false},
		{labels.Set{"kubernetes.io/metadata.name": "kube-system", "team": "shop", "tier": "web"}, false},
		{labels.Set{"kubernetes.io/metadata.name": "apps", "team": "shop", "tier": "web", OptOutLabel: OptOutValue}, false},
	} {
		if got := sel.Matches(tc.labels); got != tc.want {
			t.Errorf("namespace %v selected: %v, want %v", tc.labels, got, tc.want)
		}
	}
	if got := *w.TimeoutSeconds; got != DefaultTimeoutSeconds {
		t.Errorf("timeoutSeconds %d, want the default %d", got, DefaultTimeoutSeconds)
	}
	r.TimeoutSeconds = 12
	if got := *r.Configuration(nil).Webhooks[0].TimeoutSeconds; got != 12 {
		t.Errorf("timeoutSeconds %d, want --webhook-timeout's 12", got)
	}
}

// applyGatePatch applies the two JSON patch forms the webhook emits (add the
// list, append to it) and fails on anything else.
func applyGatePatch(t *testing.T, pod *v1.Pod, patch []byte) []v1.PodSchedulingGate {
	t.Helper()
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	gates := pod.Spec.SchedulingGates
	for _, op := range ops {
		switch {
		case op.Op == "add" && op.Path == "/spec/schedulingGates" && gates == nil:
			if err := json.Unmarshal(op.Value, &gates); err != nil {
				t.Fatal(err)
			}
		case op.Op == "add" && op.Path == "/spec/schedulingGates/-" && gates != nil:
			var g v1.PodSchedulingGate
			if err := json.Unmarshal(op.Value, &g); err != nil {
				t.Fatal(err)
			}
			gates = append(gates, g)
		default:
			t.Fatalf("unexpected patch operation %s %s on gates %v", op.Op, op.Path, gates)
		}
	}
	return gates
}

// TestAdmitWithoutController: with no controller running to remove it, a
// gate would hold the pod forever, so the pod is admitted ungated, with a
// warning the client shows and the reason.
func TestAdmitWithoutController(t *testing.T) {
	for _, tc := range []struct {
		name        string
		running     bool
		wantPatch   bool
		wantWarning string
	}{
		{name: "controller running", running: true, wantPatch: true},
		{name: "no controller", wantWarning: "archfilter placement: pod not gated, no placement controller is running to ungate it (the Lease has no holder)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			h := &Handler{Settings: &decision.Settings{}, Logger: logger, ControllerRunning: func() (bool, string) { return tc.running, "the Lease has no holder" }}
			raw, err := json.Marshal(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img"}}}})
			if err != nil {
				t.Fatal(err)
			}
			resp := h.Admit(&admissionv1.AdmissionRequest{
				UID: "uid-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Namespace: "apps", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
			})
			if !resp.Allowed {
				t.Fatalf("response %+v, want allowed", resp)
			}
			if got := resp.Patch != nil; got != tc.wantPatch {
				t.Errorf("patched: %v, want %v", got, tc.wantPatch)
			}
			var want []string
			if tc.wantWarning != "" {
				want = []string{tc.wantWarning + "; it is scheduled without the node affinity its images need"}
			}
			if diff := gocmp.Diff(want, resp.Warnings); diff != "" {
				t.Errorf("warnings (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestAdmitWarnsAsTheLint: the admission warnings about a pod's annotations are
// package decision's findings, word for word, as the plugin's events and kubectl
// archfilter check say them.
func TestAdmitWarnsAsTheLint(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	h := &Handler{Settings: &decision.Settings{}, Logger: logger}
	annots := map[string]string{annotations.Skip: "yes", annotations.Platforms: "linux/amd64,,arm64", "archfilter.io/platfroms": "linux/arm64"}
	raw, err := json.Marshal(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: annots}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img"}}}})
	if err != nil {
		t.Fatal(err)
	}
	resp := h.Admit(&admissionv1.AdmissionRequest{
		UID: "uid-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Namespace: "apps", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
	})
	var want []string
	for _, f := range decision.LintAnnotations(annots) {
		want = append(want, "archfilter placement: "+f.Message)
	}
	if len(want) != 3 {
		t.Fatalf("the lint found %d mistakes, want 3: %q", len(want), want)
	}
	if diff := gocmp.Diff(want, resp.Warnings); diff != "" {
		t.Errorf("warnings (-want,+got):\n%s", diff)
	}
	for _, hint := range []string{"did you mean archfilter.io/platforms?", `did you mean "true"?`, "syntax error", "did you mean linux/amd64,linux/arm64?"} {
		if !strings.Contains(strings.Join(resp.Warnings, "\n"), hint) {
			t.Errorf("no warning says %q: %q", hint, resp.Warnings)
		}
	}
}

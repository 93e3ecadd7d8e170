package webhook

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/internal/placement/serving/servingtest"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/placement"
)

// reviewSeeds are AdmissionReviews as TestAdmit builds them: its pods, created or
// updated, in a namespace in scope or excluded, and bodies that are not reviews.
func reviewSeeds(t testing.TB) [][]byte {
	gate := v1.PodSchedulingGate{Name: placement.GateName}
	other := v1.PodSchedulingGate{Name: "example.com/other"}
	pod := func(mutate ...func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img"}}}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	annotated := func(annots map[string]string) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Annotations = annots }
	}
	pods := []*v1.Pod{
		pod(),
		pod(func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{other} }),
		pod(func(p *v1.Pod) { p.Spec.NodeName = "n" }),
		pod(func(p *v1.Pod) { p.Spec.SchedulerName = "archfilter-scheduler" }),
		pod(func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{gate} }),
		pod(annotated(map[string]string{annotations.Skip: "true"})),
		pod(annotated(map[string]string{annotations.Skip: "yes"})),
		pod(annotated(map[string]string{"archfilter.io/skp": "true"})),
		pod(annotated(map[string]string{annotations.Platforms: "linux/arm46", "archfilter.io/platfroms": "linux/arm64"})),
		pod(annotated(map[string]string{annotations.Skip: "yes", annotations.Platforms: "linux/amd64,,arm64", "archfilter.io/platfroms": "linux/arm64"})),
		pod(func(p *v1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: ptr.To(true)}}
		}),
		pod(func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelArchStable, Operator: v1.NodeSelectorOpIn, Values: []string{"arm64"}}}}}}}}
			p.Spec.NodeSelector = map[string]string{v1.LabelOSStable: "linux"}
		}),
	}
	var seeds [][]byte
	for i, p := range pods {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range []admissionv1.AdmissionRequest{
			{Namespace: "apps", Operation: admissionv1.Create},
			{Namespace: "kube-system", Operation: admissionv1.Create},
			{Namespace: "apps", Operation: admissionv1.Update},
		} {
			req.UID = "uid-1"
			req.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
			req.Resource = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
			req.Object = runtime.RawExtension{Raw: raw}
			if i > 0 && req.Operation != admissionv1.Create {
				continue
			}
			body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &req})
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, body)
		}
	}
	return append(seeds,
		[]byte("{not json"),
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`),
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"kind":"Pod"},"operation":"CREATE","object":null}}`),
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"kind":"Pod"},"operation":"CREATE","subResource":"binding","object":{}}}`),
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"kind":"Pod"},"operation":"CREATE","namespace":"apps","object":{"spec":{"schedulingGates":null}}}}`),
	)
}

// printable reports whether s is what the API server passes on as a warning: UTF-8
// without control characters (k8s.io/apimachinery's NewWarningHeader drops the rest).
func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// FuzzAdmissionReview posts arbitrary bytes to the placement webhook (ServeHTTP).
// Besides "no panic":
//   - one request allocates at most 64 bytes per body byte plus 1 MiB, within
//     fuzzcheck.DefaultTime (the review and the pod are decoded, the response encoded);
//   - the answer is a 400 or 413 exactly when the body is not an AdmissionReview with a
//     request (or is over serving.MaxReviewBody); otherwise a 200 whose body is an
//     AdmissionReview with the request's apiVersion and kind, a response with the
//     request's uid, allowed (the webhook never blocks a pod), and patch and patchType
//     both set or both unset;
//   - a patch is only for the creation of a Pod (no subresource) that does not carry the
//     gate yet; it is a JSON patch that gopkg.in/evanphx/json-patch.v4 (the API server's
//     own) decodes and applies to the pod as the API server encodes it, and the patched
//     pod is the pod with archfilter.io/placement appended to spec.schedulingGates
//     (the list created when there was none) and nothing else changed, the gate once;
//   - warnings are text the API server passes on (UTF-8, no control characters) when
//     the pod's annotation keys are (a key is quoted as written; the API server's
//     validation refuses such keys after mutating admission).
func FuzzAdmissionReview(f *testing.F) {
	for _, s := range reviewSeeds(f) {
		f.Add(s)
	}
	h := &Handler{
		Settings: &decision.Settings{ExcludedNamespaces: sets.New("kube-system"), Schedulers: sets.New("archfilter-scheduler"), DaemonSetPolicy: config.DaemonSetPolicySkip},
		Logger:   klog.Background(),
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, resp := servingtest.Review(t, h, Path, body, "a pod")
		if req == nil {
			return
		}
		checkPatchType(t, resp)

		var pod v1.Pod
		podErr := json.Unmarshal(req.Object.Raw, &pod)
		clean := podErr == nil
		for k := range pod.Annotations {
			clean = clean && printable(k)
		}
		for _, w := range resp.Warnings {
			if clean && !printable(w) {
				t.Errorf("warning %q is not text the API server passes on", w)
			}
		}
		if len(resp.Patch) == 0 {
			return
		}
		if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" || req.SubResource != "" || podErr != nil {
			t.Fatalf("a patch for operation %q of kind %q, subresource %q (pod decoding: %v)", req.Operation, req.Kind.Kind, req.SubResource, podErr)
		}
		if placement.HasGate(&pod) {
			t.Fatalf("a patch for a pod that carries the gate already: %s", resp.Patch)
		}
		patch, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatalf("patch %s does not decode: %v", resp.Patch, err)
		}
		// The API server applies the patch to its own encoding of the object
		// (k8s.io/apiserver's mutating dispatcher: runtime.Encode, then Apply).
		encoded, err := json.Marshal(&pod)
		if err != nil {
			t.Fatal(err)
		}
		patched, err := patch.Apply(encoded)
		if err != nil {
			t.Fatalf("patch %s does not apply to the pod %s: %v", resp.Patch, encoded, err)
		}
		checkOnlyGateAdded(t, encoded, patched)
	})
}

// checkPatchType: a patch comes with its type, JSONPatch, and a type with a patch.
func checkPatchType(t *testing.T, resp *admissionv1.AdmissionResponse) {
	t.Helper()
	if (len(resp.Patch) > 0) != (resp.PatchType != nil) {
		t.Errorf("patch %q with patchType %v", resp.Patch, resp.PatchType)
	}
	if pt := resp.PatchType; pt != nil && *pt != admissionv1.PatchTypeJSONPatch {
		t.Errorf("patchType %q", *pt)
	}
}

// checkOnlyGateAdded: after is before with archfilter.io/placement appended to
// spec.schedulingGates, and nothing else.
func checkOnlyGateAdded(t *testing.T, before, after []byte) {
	t.Helper()
	var b, a map[string]any
	if err := json.Unmarshal(before, &b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after, &a); err != nil {
		t.Fatalf("the patched pod %s is not a JSON object: %v", after, err)
	}
	bSpec, _ := b["spec"].(map[string]any)
	aSpec, _ := a["spec"].(map[string]any)
	if bSpec == nil || aSpec == nil {
		t.Fatalf("spec before %v, after %v", b["spec"], a["spec"])
	}
	bGates, _ := bSpec["schedulingGates"].([]any)
	aGates, _ := aSpec["schedulingGates"].([]any)
	want := append(append([]any{}, bGates...), map[string]any{"name": placement.GateName})
	if !reflect.DeepEqual(aGates, want) {
		t.Errorf("scheduling gates %v after the patch, want %v", aGates, want)
	}
	delete(bSpec, "schedulingGates")
	delete(aSpec, "schedulingGates")
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the patch changed more than spec.schedulingGates:\nbefore %s\nafter  %s", before, after)
	}
	var pod v1.Pod
	if err := json.Unmarshal(after, &pod); err != nil {
		t.Fatalf("the patched pod does not decode: %v", err)
	}
	n := 0
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == placement.GateName {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the patched pod carries the gate %d times", n)
	}
}

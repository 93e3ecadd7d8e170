package warnings

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/internal/placement/serving/servingtest"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
)

// warningsSeeds are AdmissionReviews of the workloads of TestWarnings and
// TestWarningsLintAnnotations, as the API server sends them.
func warningsSeeds(t testing.TB) [][]byte {
	cron := &batchv1.CronJob{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"}, ObjectMeta: metav1.ObjectMeta{Name: "nightly"}}
	cron.Spec.JobTemplate.Spec.Template = template("s390x")
	ds := &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}, ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1.DaemonSetSpec{Template: template("s390x")}}
	skipped := template("s390x")
	skipped.Annotations = map[string]string{annotations.Skip: "true"}
	linted := template("multi")
	linted.Annotations = map[string]string{"archfilter.io/platfroms": "linux/arm64", annotations.Skip: "yes"}
	lintedDeployment := deployment("web", linted)
	lintedDeployment.Annotations = map[string]string{annotations.Skip: "true"}
	unknownArch := template("amd")
	unknownArch.Annotations = map[string]string{annotations.Platforms: "linux/arm46"}
	longValue := template("amd")
	longValue.Annotations = map[string]string{annotations.Platforms: "linux/amd64," + strings.Repeat("línux/ärm64,", 20)}
	var seeds [][]byte
	for _, tc := range []struct {
		ns  string
		op  admissionv1.Operation
		obj runtime.Object
	}{
		{"shop", admissionv1.Create, deployment("web", template("s390x"))},
		{"shop", admissionv1.Update, deployment("web", template("amd", "arm"))},
		{"team", admissionv1.Create, deployment("web", template("amd"))},
		{"shop", admissionv1.Create, cron},
		{"team", admissionv1.Create, ds},
		{"shop", admissionv1.Create, deployment("web", template("multi"))},
		{"shop", admissionv1.Create, deployment("web", template("s390x", "gone"))},
		{"shop", admissionv1.Create, deployment("web", skipped)},
		{"kube-system", admissionv1.Create, deployment("web", template("s390x"))},
		{"shop", admissionv1.Delete, deployment("web", template("s390x"))},
		{"shop", admissionv1.Create, &v1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}},
		{"shop", admissionv1.Create, lintedDeployment},
		{"shop", admissionv1.Create, deployment("web", unknownArch)},
		{"shop", admissionv1.Create, deployment("web", longValue)},
	} {
		req := requestOf(t, tc.ns, tc.op, tc.obj)
		body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, body)
	}
	return append(seeds, []byte("{not json"), []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`))
}

// requestOf is request's admission request, for a fuzz target's seeds.
func requestOf(t testing.TB, ns string, op admissionv1.Operation, obj runtime.Object) *admissionv1.AdmissionRequest {
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	resource := map[string]string{"Deployment": "deployments", "DaemonSet": "daemonsets", "CronJob": "cronjobs", "ConfigMap": "configmaps"}[gvk.Kind]
	return &admissionv1.AdmissionRequest{
		UID: "uid-1", Operation: op, Namespace: ns, Kind: metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource: metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource},
		Object:   runtime.RawExtension{Raw: raw},
	}
}

// fuzzHandler is TestWarnings' handler: policies enabled, no policy, the fake
// resolver's images, amd64 and arm64 nodes.
func fuzzHandler(t testing.TB) *Handler {
	s, err := decision.NewSettings(&config.ArchFilterArgs{FailurePolicy: config.FailurePolicyIgnore, DaemonSetPolicy: config.DaemonSetPolicySkip,
		ExcludedNamespaces: []string{"kube-system"}, Policies: config.PolicyArgs{Enabled: true, AllowedOverrides: config.PolicyFields}})
	if err != nil {
		t.Fatal(err)
	}
	nodes := []platform.NodePlatform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
	return &Handler{
		Settings: s,
		Resolver: fakeResolver{
			"amd": "linux/amd64", "arm": "linux/arm64", "s390x": "linux/s390x", "multi": "linux/amd64,linux/arm64",
			"gone": errors.New("registry.example: NotFound"),
		},
		Credentials:   noCredentials{},
		NodePlatforms: func() []platform.NodePlatform { return nodes },
		Logger:        klog.Background(),
	}
}

// printable reports whether s is what the API server passes on as a warning: UTF-8
// without control characters (k8s.io/apimachinery's NewWarningHeader drops the rest).
func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// FuzzWarningsReview posts arbitrary bytes to the workload warnings webhook
// (ServeHTTP). Besides "no panic":
//   - one request allocates at most 64 bytes per body byte plus 1 MiB, within
//     fuzzcheck.DefaultTime;
//   - the answer is a 400 or 413 exactly when the body is not an AdmissionReview with a
//     request (or is over serving.MaxReviewBody); otherwise a 200 whose body is an
//     AdmissionReview with the request's apiVersion and kind, a response with the
//     request's uid, allowed, and neither patch nor patchType (the API server refuses
//     either from a validating webhook);
//   - each warning is at most maxWarning bytes, and is text the API server passes on
//     (UTF-8, no control characters) when what it quotes of the request is: the kind,
//     namespace, name and annotation keys (the API server validated the object before
//     a validating webhook sees it).
func FuzzWarningsReview(f *testing.F) {
	for _, s := range warningsSeeds(f) {
		f.Add(s)
	}
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, resp := servingtest.Review(t, h, Path, body, "a workload")
		if req == nil {
			return
		}
		if len(resp.Patch) > 0 || resp.PatchType != nil {
			t.Errorf("a validating webhook answered a patch: %s", resp.Patch)
		}

		var w workload
		clean := printable(req.Kind.Kind) && printable(req.Namespace)
		if json.Unmarshal(req.Object.Raw, &w) == nil {
			clean = clean && printable(w.Name) && printable(w.GenerateName)
			for k := range w.Annotations {
				clean = clean && printable(k)
			}
			for _, tmpl := range []*v1.PodTemplateSpec{w.Spec.Template, jobTemplate(&w)} {
				if tmpl != nil {
					for k := range tmpl.Annotations {
						clean = clean && printable(k)
					}
				}
			}
		}
		for _, warning := range resp.Warnings {
			if len(warning) > maxWarning {
				t.Errorf("warning of %d bytes, more than %d: %q", len(warning), maxWarning, warning)
			}
			if clean && !printable(warning) {
				t.Errorf("warning %q is not text the API server passes on", warning)
			}
		}
	})
}

func jobTemplate(w *workload) *v1.PodTemplateSpec {
	if w.Spec.JobTemplate == nil {
		return nil
	}
	return w.Spec.JobTemplate.Spec.Template
}

// TestWarningsAreText: a warning cut to maxWarning is cut between characters: cut inside
// one, it reached the client with a replacement character, 2 bytes over maxWarning.
func TestWarningsAreText(t *testing.T) {
	tmpl := template("amd")
	tmpl.Annotations = map[string]string{annotations.Platforms: "linux/amd64," + strings.Repeat("línux/ärm64,", 20)}
	for _, name := range []string{"web", "we", "w"} { // shift the cut by a byte
		got := fuzzHandler(t).Warnings(context.Background(), request(t, "shop", admissionv1.Create, deployment(name, tmpl)))
		if len(got) == 0 {
			t.Fatal("no warning")
		}
		for _, w := range got {
			if !utf8.ValidString(w) || len(w) > maxWarning {
				t.Errorf("warning of %d bytes, valid UTF-8: %v: %q", len(w), utf8.ValidString(w), w)
			}
		}
	}
}

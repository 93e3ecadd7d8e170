// Package warnings is the companion's validating admission webhook for
// workloads: when a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or
// CronJob is created or updated, it warns (never denies) when the pod
// template's images run on no platform of the cluster's nodes, or on none the
// namespace's ArchFilterPolicy allows, so that kubectl apply and GitOps tools
// show the problem before a pod is Pending. It decides as the front-ends do
// (package decision), from what the resolver knows or learns within a short
// budget, and says nothing rather than guess: an image it cannot resolve in
// time, or a cluster whose nodes it does not know yet, earns no warning.
package warnings

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/internal/placement/podimages"
	"github.com/archfilter/archfilter/internal/placement/serving"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
)

// Path is where the handler is served.
const Path = "/warn-workloads"

// DefaultBudget bounds the registry lookups of one admission request.
const DefaultBudget = 2 * time.Second

// maxWarning keeps a warning under the length the API server passes on whole.
const maxWarning = 250

// Kinds are the workload kinds warned about, by API group.
var Kinds = map[string][]string{
	"apps":  {"deployments", "statefulsets", "daemonsets", "replicasets"},
	"batch": {"jobs", "cronjobs"},
}

// Handler answers AdmissionReviews for workloads.
type Handler struct {
	Settings   *decision.Settings
	Policies   decision.PolicyLookup
	Namespaces decision.NamespaceLabels
	Resolver   podimages.Resolver
	// Credentials are the pull credentials of a pod of the template.
	Credentials podimages.Credentials
	// NodePlatforms are the distinct platforms of the cluster's nodes; none
	// known means no warning about nodes.
	NodePlatforms func() []platform.NodePlatform
	// Budget bounds the registry lookups of one request; 0 means DefaultBudget.
	Budget time.Duration
	Logger klog.Logger
}

// ServeHTTP decodes an AdmissionReview and answers it, always allowing.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serving.AdmissionReview(w, r, h.Logger, func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: h.Warnings(ctx, req)}
	})
}

// workload is the part of a workload object the warnings read.
type workload struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Template    *v1.PodTemplateSpec `json:"template"`
		JobTemplate *struct {
			Spec struct {
				Template *v1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		} `json:"jobTemplate"`
	} `json:"spec"`
}

// Warnings returns the warnings for one admission request; none for anything
// that is not a workload's create or update.
func (h *Handler) Warnings(ctx context.Context, req *admissionv1.AdmissionRequest) []string {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" || !isWorkload(req.Resource) {
		return nil
	}
	var w workload
	if err := json.Unmarshal(req.Object.Raw, &w); err != nil {
		return nil
	}
	tmpl := w.Spec.Template
	if w.Spec.JobTemplate != nil {
		tmpl = w.Spec.JobTemplate.Spec.Template
	}
	if tmpl == nil {
		return nil
	}
	name := w.Name
	if name == "" {
		name = w.GenerateName + "*"
	}
	what := fmt.Sprintf("%s %s/%s", req.Kind.Kind, req.Namespace, name)
	var out []string
	// Mistakes in the archfilter.io/ annotations, of the pod template and of the
	// workload's own metadata (package decision's one judge of them, as the plugin's
	// events and kubectl archfilter check).
	for _, f := range append(decision.LintWorkloadAnnotations(req.Kind.Kind, w.Annotations), decision.LintAnnotations(tmpl.Annotations)...) {
		out = append(out, truncate(fmt.Sprintf("archfilter: %s: %s", what, f.Message)))
	}
	if msg, ok := h.judge(ctx, req, tmpl); ok {
		h.Logger.V(3).Info("Warning about a workload", "workload", what, "warning", msg)
		out = append(out, truncate(fmt.Sprintf("archfilter: %s: %s", what, msg)))
	}
	return out
}

// judge decides for a pod of tmpl and says what is wrong; ok is false when
// nothing is, or when it does not know.
func (h *Handler) judge(ctx context.Context, req *admissionv1.AdmissionRequest, tmpl *v1.PodTemplateSpec) (string, bool) {
	pod := &v1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Namespace = req.Namespace
	if req.Kind.Kind == "DaemonSet" {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "template", Controller: ptr.To(true)}}
	}
	rules := h.Settings.ForPod(pod, h.Policies)
	skip := rules.Scope(pod, rules.FrontOf(pod), h.Namespaces)
	if skip != "" && !skip.ReadsImages() {
		return "", false
	}
	rules = rules.ForImagesOf(skip)
	lookup := podimages.Lookup(nil)
	if !decision.Declared(pod) {
		budget := h.Budget
		if budget <= 0 {
			budget = DefaultBudget
		}
		rctx, cancel := context.WithTimeout(ctx, budget)
		defer cancel()
		lookup = podimages.Resolve(rctx, h.Resolver, h.Credentials, pod)
		known := true
		podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
			res, ok := lookup(img.Reference)
			known = ok && res.Err == nil
			return known
		})
		if !known {
			return "", false // says nothing rather than guess
		}
	}
	d := rules.Decide(pod, lookup)
	if r := d.Rejection; r != nil {
		return r.Message + "; its pods will stay Pending", true
	}
	if d.Platforms.IsAny() || h.NodePlatforms == nil {
		return "", false
	}
	nodes := h.NodePlatforms()
	if len(nodes) == 0 {
		return "", false
	}
	for _, np := range nodes {
		if d.Platforms.MatchesNode(np) {
			return "", false
		}
	}
	names := make([]string, len(nodes))
	for i, np := range nodes {
		names[i] = np.String()
	}
	where := "its images run on " + d.Platforms.String()
	if d.Policy != "" {
		where += " (within ArchFilterPolicy " + d.Policy + ")"
	}
	return fmt.Sprintf("%s, and no node of the cluster does (nodes: %s); its pods will stay Pending", where, strings.Join(names, ", ")), true
}

func isWorkload(r metav1.GroupVersionResource) bool {
	for _, res := range Kinds[r.Group] {
		if res == r.Resource {
			return true
		}
	}
	return false
}

// truncate cuts s to maxWarning bytes, between characters: a character cut in
// two would reach the client as a replacement character, and the warning as
// more than maxWarning bytes (the response's JSON encoding writes the stray
// byte as the three of U+FFFD).
func truncate(s string) string {
	if len(s) <= maxWarning {
		return s
	}
	cut := maxWarning - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

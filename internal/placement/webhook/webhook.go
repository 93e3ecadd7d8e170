// Package webhook is the placement mode's mutating admission webhook: it adds
// the archfilter.io/placement scheduling gate to new pods in scope, and
// registers itself in the MutatingWebhookConfiguration it owns.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/archfilter/archfilter/internal/placement/metrics"
	"github.com/archfilter/archfilter/internal/placement/serving"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/placement"
)

// Path is where the handler is served.
const Path = "/mutate-pods"

// Handler answers AdmissionReviews for pod creation.
type Handler struct {
	// Settings decide which pods are in scope (package decision, as the
	// plugin): the excluded namespaces (the webhook's namespace selector
	// excludes them too; this is the second line), the namespace selector,
	// archfilter.io/skip, the DaemonSet policy, bound pods, and pods naming a
	// scheduler that runs ArchFilter (Settings.Schedulers), which the plugin decides.
	Settings *decision.Settings
	// Namespaces gives a namespace's labels, for the namespace selector.
	Namespaces decision.NamespaceLabels
	// Policies reads the ArchFilterPolicy objects; nil without policies.
	Policies decision.PolicyLookup
	Logger   klog.Logger
	// ControllerRunning, when set, tells whether a placement controller is
	// running to remove the gates (this process's, or the Lease holder's):
	// without one a gate would never be removed, so pods are admitted ungated
	// with a warning instead. Nil means always.
	ControllerRunning func() (running bool, why string)
}

// ServeHTTP decodes an AdmissionReview, decides and answers it. Anything it
// cannot decode is allowed unchanged: the webhook never blocks a pod.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serving.AdmissionReview(w, r, h.Logger, func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return h.Admit(req)
	})
}

// Admit returns the response to one admission request: allowed, with a
// JSON patch adding the gate when the pod is in scope.
func (h *Handler) Admit(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" || req.SubResource != "" {
		return allow
	}
	var pod v1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		allow.Warnings = []string{fmt.Sprintf("archfilter placement: pod not gated, it could not be decoded: %v", err)}
		return allow
	}
	// The object of a create request may lack its namespace.
	pod.Namespace = req.Namespace
	// Mistakes in its archfilter.io/ annotations (package decision's one judge of them,
	// as the plugin's events and kubectl archfilter check), whether it is gated or not.
	for _, f := range decision.LintAnnotations(pod.Annotations) {
		allow.Warnings = append(allow.Warnings, "archfilter placement: "+f.Message)
	}
	if reason := h.skip(&pod); reason != "" {
		h.Logger.V(5).Info("Pod not gated", "namespace", req.Namespace, "name", pod.Name, "generateName", pod.GenerateName, "reason", reason)
		return allow
	}
	if h.ControllerRunning != nil {
		if running, why := h.ControllerRunning(); !running {
			h.Logger.V(2).Info("Pod not gated: no placement controller is running", "namespace", req.Namespace, "name", pod.Name, "generateName", pod.GenerateName, "why", why)
			allow.Warnings = append(allow.Warnings, "archfilter placement: pod not gated, no placement controller is running to ungate it ("+why+"); it is scheduled without the node affinity its images need")
			if req.DryRun == nil || !*req.DryRun {
				metrics.NotGated.Inc()
			}
			return allow
		}
	}
	patch, err := json.Marshal(gatePatch(&pod))
	if err != nil {
		return allow
	}
	pt := admissionv1.PatchTypeJSONPatch
	allow.Patch, allow.PatchType = patch, &pt
	if req.DryRun == nil || !*req.DryRun {
		metrics.PodsGated.Inc()
	}
	return allow
}

// skip names why pod is not gated, or "".
func (h *Handler) skip(pod *v1.Pod) string {
	if reason := h.Settings.ForPod(pod, h.Policies).Scope(pod, decision.ViaPlacement, h.Namespaces); reason != "" {
		return string(reason)
	}
	if placement.HasGate(pod) {
		return "already gated"
	}
	return ""
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

func gatePatch(pod *v1.Pod) []patchOp {
	gate := v1.PodSchedulingGate{Name: placement.GateName}
	if len(pod.Spec.SchedulingGates) == 0 {
		return []patchOp{{Op: "add", Path: "/spec/schedulingGates", Value: []v1.PodSchedulingGate{gate}}}
	}
	return []patchOp{{Op: "add", Path: "/spec/schedulingGates/-", Value: gate}}
}

package serving

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"
)

// maxReviewBody bounds an AdmissionReview request body.
const maxReviewBody = 8 << 20

// AdmissionReview answers one AdmissionReview request with what answer
// returns for it, as the API server expects (the request's UID and
// apiVersion/kind echoed). A body that is not a review is a 400.
func AdmissionReview(w http.ResponseWriter, r *http.Request, logger klog.Logger,
	answer func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading the request: %v", err), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("decoding the AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	resp := answer(r.Context(), review.Request)
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		logger.Error(err, "Writing the AdmissionReview response")
	}
}

package serving

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"
)

// MaxReviewBody bounds an AdmissionReview request body. The API server refuses
// request bodies over 3 MiB (--max-request-bytes' default), so an object it
// admits is at most that; a review carries the object and, for an update, the
// old object, each JSON-encoded again, with the request's metadata: 8 MiB holds
// that and refuses anything larger before it is read.
const MaxReviewBody = 8 << 20

// AdmissionReview answers one AdmissionReview request with what answer
// returns for it, as the API server expects (the request's UID and
// apiVersion/kind echoed). A body that is not a review is a 400, one over
// MaxReviewBody a 413, refused without reading more than MaxReviewBody+1 bytes
// of it (none when its Content-Length says so).
func AdmissionReview(w http.ResponseWriter, r *http.Request, logger klog.Logger,
	answer func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	tooLarge := fmt.Sprintf("the AdmissionReview is larger than %d bytes", MaxReviewBody)
	if r.ContentLength > MaxReviewBody {
		http.Error(w, tooLarge, http.StatusRequestEntityTooLarge)
		return
	}
	// Not a LimitReader: a body cut at the limit could still decode (a review
	// followed by blanks) and be answered as if it were whole.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxReviewBody))
	if err != nil {
		if tooBig := new(http.MaxBytesError); errors.As(err, &tooBig) {
			http.Error(w, tooLarge, http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, fmt.Sprintf("reading the request: %v", err), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		http.Error(w, fmt.Sprintf("decoding the AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	if review.Request == nil {
		http.Error(w, "decoding the AdmissionReview: it has no request", http.StatusBadRequest)
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

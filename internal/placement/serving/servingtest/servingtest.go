// Package servingtest checks the HTTP contract both of the placement mode's admission
// webhooks keep (internal/placement/serving), for their tests and fuzz targets.
package servingtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/archfilter/archfilter/internal/fuzzcheck"
	"github.com/archfilter/archfilter/internal/placement/serving"
)

// Review posts body to h at path, within 64 bytes allocated per body byte plus 1 MiB,
// and checks the answer: a 400 or 413 exactly when body is not an AdmissionReview with a
// request (or is over serving.MaxReviewBody); otherwise a 200 whose JSON body is an
// AdmissionReview of the request's apiVersion and kind, with a response of the request's
// uid, allowed. It returns the request and the response, or nils when body was refused as
// it should be. what names the webhook in failures.
func Review(t testing.TB, h http.Handler, path string, body []byte, what string) (*admissionv1.AdmissionRequest, *admissionv1.AdmissionResponse) {
	t.Helper()
	rec := httptest.NewRecorder()
	fuzzcheck.Within(t, "answering "+what+"'s AdmissionReview", fuzzcheck.Limits{Alloc: fuzzcheck.PerInputByte(body, 64, fuzzcheck.MiB)}, func() {
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	})
	var in admissionv1.AdmissionReview
	isReview := json.Unmarshal(body, &in) == nil && in.Request != nil && len(body) <= serving.MaxReviewBody
	if rec.Code != http.StatusOK {
		if isReview {
			t.Fatalf("status %d (%s) for an AdmissionReview", rec.Code, rec.Body)
		}
		if rec.Code != http.StatusBadRequest && rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d (%s), want 400 or 413 for what is not a review", rec.Code, rec.Body)
		}
		return nil, nil
	}
	if !isReview {
		t.Fatalf("answered %s for what is not an AdmissionReview", rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("the answer %s is not an AdmissionReview: %v", rec.Body, err)
	}
	if out.Response == nil || out.Request != nil {
		t.Fatalf("the answer %s has no response, or a request", rec.Body)
	}
	if out.TypeMeta != in.TypeMeta {
		t.Errorf("answered as %+v to a review of %+v", out.TypeMeta, in.TypeMeta)
	}
	if out.Response.UID != in.Request.UID {
		t.Errorf("response uid %q, the request's is %q", out.Response.UID, in.Request.UID)
	}
	if !out.Response.Allowed {
		t.Errorf("%s refused: %s", what, rec.Body)
	}
	return in.Request, out.Response
}

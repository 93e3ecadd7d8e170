package serving

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"
)

// countingReader is an endless body of blanks that counts what was read of it.
type countingReader struct{ read int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	c.read += int64(len(p))
	return len(p), nil
}

func allowAll(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

// TestAdmissionReviewBodyLimit: a body over MaxReviewBody is a 413, read no further
// than the limit (not at all when its Content-Length says it is over), even when what
// comes before the limit is a whole review; a review of exactly the limit is answered.
func TestAdmissionReviewBodyLimit(t *testing.T) {
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-1"}}`)
	for _, tc := range []struct {
		name          string
		body          func() (io.Reader, *countingReader)
		contentLength int64 // -1: unknown (chunked)
		want          int
	}{
		{name: "endless body, length unknown", contentLength: -1, want: http.StatusRequestEntityTooLarge, body: func() (io.Reader, *countingReader) {
			c := &countingReader{}
			return io.MultiReader(bytes.NewReader(review), c), c
		}},
		{name: "declared too large", contentLength: MaxReviewBody + 1, want: http.StatusRequestEntityTooLarge, body: func() (io.Reader, *countingReader) {
			c := &countingReader{}
			return io.MultiReader(bytes.NewReader(review), c), c
		}},
		{name: "a review padded to the limit", contentLength: -1, want: http.StatusOK, body: func() (io.Reader, *countingReader) {
			return io.MultiReader(bytes.NewReader(review), strings.NewReader(strings.Repeat(" ", MaxReviewBody-len(review)))), nil
		}},
		{name: "a review padded one byte over the limit", contentLength: -1, want: http.StatusRequestEntityTooLarge, body: func() (io.Reader, *countingReader) {
			return io.MultiReader(bytes.NewReader(review), strings.NewReader(strings.Repeat(" ", MaxReviewBody+1-len(review)))), nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, counter := tc.body()
			r := httptest.NewRequest(http.MethodPost, "/", body)
			r.ContentLength = tc.contentLength
			rec := httptest.NewRecorder()
			AdmissionReview(rec, r, klog.Background(), allowAll)
			if rec.Code != tc.want {
				t.Fatalf("status %d (%s), want %d", rec.Code, strings.TrimSpace(rec.Body.String()), tc.want)
			}
			if counter != nil && int64(len(review))+counter.read > MaxReviewBody+1 {
				t.Errorf("read %d bytes of a body over the limit of %d", int64(len(review))+counter.read, MaxReviewBody)
			}
			if tc.contentLength > MaxReviewBody && counter.read > 0 {
				t.Errorf("read %d bytes of a body whose Content-Length is over the limit", counter.read)
			}
			if tc.want != http.StatusOK {
				if !strings.Contains(rec.Body.String(), "larger than") {
					t.Errorf("the 413 does not say why: %s", rec.Body)
				}
				return
			}
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil || out.Response.UID != "uid-1" {
				t.Errorf("response %s (%v), want the review's answer", rec.Body, err)
			}
		})
	}
}

// TestAdmissionReviewWithoutRequest: a review without a request is a 400 that says so.
func TestAdmissionReviewWithoutRequest(t *testing.T) {
	rec := httptest.NewRecorder()
	AdmissionReview(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"kind":"AdmissionReview"}`)), klog.Background(), allowAll)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "no request") {
		t.Errorf("status %d (%s), want 400 saying there is no request", rec.Code, rec.Body)
	}
}

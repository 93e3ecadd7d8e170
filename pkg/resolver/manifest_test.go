package resolver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

func TestClassifyManifest(t *testing.T) {
	const (
		index    = `{"schemaVersion":2,"manifests":[]}`
		image    = `{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json"},"layers":[]}`
		schema1  = `{"schemaVersion":1,"architecture":"amd64"}`
		ociIndex = `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`
	)
	for _, tc := range []struct {
		name, contentType, body string
		want                    manifestKind
	}{
		{"OCI index", "application/vnd.oci.image.index.v1+json", index, kindIndex},
		{"Docker list", "application/vnd.docker.distribution.manifest.list.v2+json", index, kindIndex},
		{"OCI image", "application/vnd.oci.image.manifest.v1+json", image, kindImage},
		{"Docker image", "application/vnd.docker.distribution.manifest.v2+json", image, kindImage},
		{"schema1 signed", "application/vnd.docker.distribution.manifest.v1+prettyjws", schema1, kindSchema1},
		{"schema1", "application/vnd.docker.distribution.manifest.v1+json", schema1, kindSchema1},
		{"OCI artifact manifest", ociArtifactManifest, `{"blobs":[]}`, kindArtifact},
		{"application/json index by mediaType", "application/json", ociIndex, kindIndex},
		{"application/json index by shape", "application/json", index, kindIndex},
		{"text/plain image by shape", "text/plain; charset=utf-8", image, kindImage},
		{"octet-stream schema1 by shape", "application/octet-stream", schema1, kindSchema1},
		{"no Content-Type", "", image, kindImage},
		{"declared image, shaped like an index", "application/vnd.oci.image.manifest.v1+json", index, kindIndex},
		{"unknown", "application/json", `{"schemaVersion":2}`, kindUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := decodeManifest([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := classifyManifest(tc.contentType, m); got != tc.want {
				t.Errorf("classifyManifest(%q, %s) = %d, want %d", tc.contentType, tc.body, got, tc.want)
			}
		})
	}
}

func TestIsArtifactManifest(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"config":{"mediaType":"application/vnd.oci.image.config.v1+json"}}`, false},
		{`{"config":{"mediaType":"application/vnd.docker.container.image.v1+json"}}`, false},
		{`{"config":{"mediaType":""}}`, false},
		{`{"config":{"mediaType":"application/vnd.cncf.helm.config.v1+json"}}`, true},
		{`{"config":{"mediaType":"application/vnd.oci.empty.v1+json"}}`, true},
		{`{"config":{"mediaType":"application/vnd.docker.plugin.v1+json"}}`, true},
		{`{"artifactType":"application/spdx+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json"}}`, true},
	} {
		m, err := decodeManifest([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if got := isArtifactManifest(m); got != tc.want {
			t.Errorf("isArtifactManifest(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

func TestClassifyErrors(t *testing.T) {
	status := func(code int) error {
		return &statusError{method: http.MethodGet, path: "/v2/app/manifests/v1", status: code}
	}
	for _, tc := range []struct {
		name       string
		err        error
		budgetErr  error
		want       Reason
		wantStatus int
	}{
		{"401", status(401), nil, ReasonUnauthorized, 401},
		{"403", status(403), nil, ReasonUnauthorized, 403},
		{"404", status(404), nil, ReasonNotFound, 404},
		{"429", status(429), nil, ReasonRateLimited, 429},
		{"500", status(500), nil, ReasonUnreachable, 500},
		{"503", status(503), nil, ReasonUnreachable, 503},
		{"ggcr token 401", &transport.Error{StatusCode: 401}, nil, ReasonUnauthorized, 401},
		{"ggcr ping 502", &transport.Error{StatusCode: 502}, nil, ReasonUnreachable, 502},
		{"deadline", &url.Error{Op: "Get", URL: "x", Err: errors.New("context deadline exceeded")}, errors.New("budget"), ReasonTimeout, 0},
		{"wrapped deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), nil, ReasonTimeout, 0},
		{"connection refused", &url.Error{Op: "Get", URL: "x", Err: errors.New("connection refused")}, nil, ReasonUnreachable, 0},
		{"not allowed", &url.Error{Op: "Get", URL: "x", Err: fmt.Errorf("169.254.169.254: %w", ErrNotAllowed)}, nil, ReasonNotAllowed, 0},
		{"circuit open", fmt.Errorf("x: %w", ErrCircuitOpen), nil, ReasonCircuitOpen, 0},
		{"rate limited by transport", fmt.Errorf("x: %w", ErrRateLimited), nil, ReasonRateLimited, http.StatusTooManyRequests},
		{"invalid manifest", invalidManifest("too big"), nil, ReasonInvalidManifest, 0},
		{"an answer wins over the budget", status(404), errors.New("budget"), ReasonNotFound, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, st := classify(tc.err, tc.budgetErr)
			if reason != tc.want || st != tc.wantStatus {
				t.Errorf("classify(%v) = %s, %d; want %s, %d", tc.err, reason, st, tc.want, tc.wantStatus)
			}
		})
	}
}

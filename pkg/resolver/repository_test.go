package resolver

import (
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// TestRepository: OpenRepository tries the candidate credentials as Resolve does, and
// the repository then reads manifests, configs, blobs and tags with the one that
// worked; a refused tags list is an *Error with its reason and status.
func TestRepository(t *testing.T) {
	ctx := testContext(t)
	m := registrytest.NewMemory(t, registrytest.WithBasicAuth("user", "pass"))
	f := m.Fixtures(t)
	idx := f.Index("app:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	f.Index("app:v2", registrytest.OCI, "linux/amd64")
	r := newTestResolver(t, Options{Endpoints: func(string) []Endpoint { return []Endpoint{{Host: m.Host(), Insecure: true}} }})

	_, err := r.OpenRepository(ctx, Request{Image: idx.Ref})
	var e *Error
	if !asError(err, &e) || e.Reason != ReasonUnauthorized || e.CredentialSource != anonymousScope {
		t.Fatalf("anonymous: got %v, want Unauthorized with anonymous credentials", err)
	}

	req := Request{Image: idx.Ref, Credentials: credsFor(m.Host(), cred("wrong", "user", "nope"), cred("right", "user", "pass"))}
	repo, err := r.OpenRepository(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if repo.CredentialSource() != "secret test/right" || repo.Identifier() != "v1" || repo.Name() != m.Host()+"/app" {
		t.Errorf("repository %s (identifier %s, name %s): want the second credential, v1, %s/app", repo, repo.Identifier(), repo.Name(), m.Host())
	}
	raw, err := repo.Manifest(ctx, idx.Children[0].Digest)
	if err != nil || raw.Digest != idx.Children[0].Digest || raw.MediaType != idx.Children[0].MediaType {
		t.Errorf("manifest: %+v, %v", raw, err)
	}
	tags, err := repo.Tags(ctx, 10)
	if diff := cmp.Diff([]string{"v1", "v2"}, tags); diff != "" || err != nil {
		t.Errorf("tags (-want,+got):\n%s\n%v", diff, err)
	}
	if tags, _ := repo.Tags(ctx, 1); len(tags) != 1 {
		t.Errorf("tags with n=1: %v", tags)
	}

	blob := f.Blob("app", "application/octet-stream", []byte("layer bytes"))
	rc, err := repo.OpenBlob(ctx, blob.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "layer bytes" {
		t.Errorf("blob: %q", got)
	}

	m.AddFault(registrytest.Fault{Path: "/v2/app/tags/list", Status: http.StatusNotFound,
		Body: []byte(`{"errors":[{"code":"UNSUPPORTED","message":"no listing"}]}`)})
	_, err = repo.Tags(ctx, 10)
	if !asError(err, &e) || e.Reason != ReasonNotFound || e.StatusCode != http.StatusNotFound {
		t.Errorf("refused tags list: got %v, want NotFound (HTTP 404)", err)
	}

	missing, err := repo.OpenBlob(ctx, "sha256:0000000000000000000000000000000000000000000000000000000000000000")
	if err == nil {
		_, _ = io.Copy(io.Discard, missing)
		missing.Close()
		t.Errorf("a missing blob opened")
	}
}

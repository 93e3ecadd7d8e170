package resolver

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// digestOf returns "algorithm:hex" of body.
func digestOf(algorithm string, body []byte) string {
	var h hash.Hash
	switch algorithm {
	case "sha256":
		h = sha256.New()
	case "sha384":
		h = sha512.New384()
	case "sha512":
		h = sha512.New()
	default:
		panic("digestOf: " + algorithm)
	}
	h.Write(body)
	return algorithm + ":" + hex.EncodeToString(h.Sum(nil))
}

// TestVerifyDigest: the algorithms a reference may name are those distribution/reference
// (the kubelet's parser) and go-digest accept, sha256, sha384 and sha512; each is checked
// against the content, and anything else is refused rather than believed.
func TestVerifyDigest(t *testing.T) {
	body := []byte(`{"schemaVersion":2}`)
	other := []byte(`{"schemaVersion":3}`)
	for _, tc := range []struct {
		name    string
		digest  string
		wantErr string // "" for success
	}{
		{name: "sha256", digest: digestOf("sha256", body)},
		{name: "sha384", digest: digestOf("sha384", body)},
		{name: "sha512", digest: digestOf("sha512", body)},
		{name: "sha256 of other content", digest: digestOf("sha256", other), wantErr: "content does not match"},
		{name: "sha384 of other content", digest: digestOf("sha384", other), wantErr: "content does not match"},
		{name: "sha512 of other content", digest: digestOf("sha512", other), wantErr: "content does not match"},
		{name: "sha384 hex of a sha256 length", digest: "sha384:" + digestOf("sha256", body)[7:], wantErr: "content does not match"},
		{name: "unknown algorithm", digest: "md5:" + strings.Repeat("0", 32), wantErr: "unsupported digest"},
		{name: "algorithm only", digest: "sha384:", wantErr: "unsupported digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verifyDigest(body, tc.digest)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("verifyDigest(%s) = %v, want success", tc.digest, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, errInvalidManifest)):
				t.Errorf("verifyDigest(%s) = %v, want InvalidManifest %q", tc.digest, err, tc.wantErr)
			}
		})
	}
}

// TestValidDigest: a digest read from a manifest goes into a request URL only when it is one
// the runtime would accept (go-digest: a known algorithm, lower-case hex of its length).
// FuzzManifestWalk found ":" requested as /manifests/:.
func TestValidDigest(t *testing.T) {
	body := []byte("x")
	for _, d := range []string{digestOf("sha256", body), digestOf("sha384", body), digestOf("sha512", body)} {
		if !validDigest(d) {
			t.Errorf("validDigest(%q) = false, want true", d)
		}
	}
	for _, d := range []string{
		"", ":", "sha256:", "sha256", "x:y", "md5:" + strings.Repeat("0", 32),
		"sha256:" + strings.Repeat("A", 64), "sha256:" + strings.Repeat("0", 63), "sha256:" + strings.Repeat("0", 65),
		"sha512:" + strings.Repeat("0", 64), "sha256:../../" + strings.Repeat("0", 58), "sha256:%zz", "sha256:\x00",
		"SHA256:" + strings.Repeat("0", 64), " sha256:" + strings.Repeat("0", 64), "sha256:" + strings.Repeat("0", 64) + "#",
	} {
		if validDigest(d) {
			t.Errorf("validDigest(%q) = true, want false", d)
		}
	}
}

// TestResolveByDigestAlgorithm resolves images named by sha384 and sha512 digests end to
// end against go-containerregistry's in-memory registry, which serves a manifest under
// whatever identifier it was pushed to: the kubelet accepts such references
// (distribution/reference), so archfilter must fetch them and verify the content against
// the named algorithm, not refuse them as InvalidManifest.
func TestResolveByDigestAlgorithm(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)
	single := f.Image("digests:single", registrytest.OCI, "linux/arm64")
	index := f.Index("digests:index", registrytest.OCI, "linux/amd64", "linux/s390x")
	singleBody, singleType := f.Manifest(relative(m.Host(), single.Ref))
	indexBody, indexType := f.Manifest(relative(m.Host(), index.Ref))

	// go-containerregistry's name package only knows sha256, so these are pushed raw.
	put := func(identifier, mediaType string, body []byte) string {
		t.Helper()
		url := "http://" + m.Host() + "/v2/digests/manifests/" + identifier
		req, err := http.NewRequestWithContext(testContext(t), http.MethodPut, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", mediaType)
		resp, err := m.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT %s: HTTP %d", url, resp.StatusCode)
		}
		return m.Host() + "/digests@" + identifier
	}
	sha512Single := put(digestOf("sha512", singleBody), singleType, singleBody)
	sha384Single := put(digestOf("sha384", singleBody), singleType, singleBody)
	sha512Index := put(digestOf("sha512", indexBody), indexType, indexBody)
	sha384Index := put(digestOf("sha384", indexBody), indexType, indexBody)
	// A registry (or mirror) that answers a digest with other content.
	sha512Wrong := put(digestOf("sha512", []byte("another manifest")), singleType, singleBody)
	sha384Wrong := put(digestOf("sha384", []byte("another manifest")), singleType, singleBody)

	r := newTestResolver(t, Options{})
	for _, tc := range []struct {
		name  string
		image string
		want  outcome
	}{
		{"sha256 image (baseline)", single.DigestRef(), ok("linux/arm64")},
		{"sha512 image", sha512Single, ok("linux/arm64")},
		{"sha384 image", sha384Single, ok("linux/arm64")},
		{"sha512 index, sha256 children", sha512Index, ok("linux/amd64", "linux/s390x")},
		{"sha384 index, sha256 children", sha384Index, ok("linux/amd64", "linux/s390x")},
		{"sha512 digest answered with other content", sha512Wrong, failed(ReasonInvalidManifest)},
		{"sha384 digest answered with other content", sha384Wrong, failed(ReasonInvalidManifest)},
		{"sha512 digest the registry does not have", m.Host() + "/digests@" + digestOf("sha512", []byte("absent")), failed(ReasonNotFound)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Resolve(testContext(t), Request{Image: tc.image})
			if diff := cmp.Diff(tc.want, outcomeOf(res)); diff != "" {
				t.Errorf("Resolve(%s) (-want,+got):\n%s\nerr: %v", tc.image, diff, res.Err)
			}
			if res.Err == nil && res.Digest != strings.SplitN(tc.image, "@", 2)[1] {
				t.Errorf("Resolve(%s).Digest = %s, want the digest it was asked for", tc.image, res.Digest)
			}
		})
	}
}

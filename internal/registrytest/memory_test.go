package registrytest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/archfilter/archfilter/internal/registrytest"
)

func get(t *testing.T, ref string, auth authn.Authenticator) (*remote.Descriptor, error) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	// The descriptor fetches configs lazily, so its context lives as long as the test.
	return remote.Get(r, remote.WithAuth(auth), remote.WithContext(t.Context()), remote.WithRetryBackoff(remote.Backoff{Steps: 1}))
}

func statusOf(err error) int {
	var terr *transport.Error
	if errors.As(err, &terr) {
		return terr.StatusCode
	}
	return 0
}

func TestFixtures(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)

	t.Run("index entries carry platforms", func(t *testing.T) {
		p := f.Index("multi:v1", registrytest.Docker, "linux/amd64", "linux/arm/v7", "windows/amd64:10.0.17763.1234")
		d, err := get(t, p.Ref, authn.Anonymous)
		if err != nil {
			t.Fatal(err)
		}
		if d.MediaType != types.DockerManifestList || d.Digest.String() != p.Digest {
			t.Errorf("got %s %s, want %s %s", d.MediaType, d.Digest, types.DockerManifestList, p.Digest)
		}
		idx, err := d.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		var got []v1.Platform
		for _, desc := range im.Manifests {
			got = append(got, *desc.Platform)
		}
		want := []v1.Platform{
			{OS: "linux", Architecture: "amd64"},
			{OS: "linux", Architecture: "arm", Variant: "v7"},
			{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1234"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("platforms (-want,+got):\n%s", diff)
		}
	})

	t.Run("single image config carries platform", func(t *testing.T) {
		p := f.Image("single:v1", registrytest.OCI, "linux/arm64/v8")
		d, err := get(t, p.Ref, authn.Anonymous)
		if err != nil {
			t.Fatal(err)
		}
		img, err := d.Image()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != "arm64" || cfg.Variant != "v8" || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("got %s/%s/%s %s", cfg.OS, cfg.Architecture, cfg.Variant, d.MediaType)
		}
	})

	t.Run("fixtures are deterministic", func(t *testing.T) {
		a := f.Index("det:v1", registrytest.OCI, "linux/amd64")
		b := f.Index("det:v1", registrytest.OCI, "linux/amd64")
		if a.Digest != b.Digest {
			t.Errorf("digests differ: %s, %s", a.Digest, b.Digest)
		}
	})

	t.Run("sparse index lacks children", func(t *testing.T) {
		p := f.Sparse("sparse:v1", []string{"linux/amd64"}, []string{"linux/arm64"})
		if _, err := get(t, p.Ref, authn.Anonymous); err != nil {
			t.Fatalf("index: %v", err)
		}
		if _, err := get(t, p.ChildRef("linux/amd64"), authn.Anonymous); err != nil {
			t.Fatalf("present child: %v", err)
		}
		if _, err := get(t, p.ChildRef("linux/arm64"), authn.Anonymous); statusOf(err) != http.StatusNotFound {
			t.Fatalf("missing child: got %v, want 404", err)
		}
	})

	t.Run("raw and other shapes push", func(t *testing.T) {
		for _, p := range []registrytest.Pushed{
			f.Schema1("old:v1", "arm"),
			f.Artifact("helm:v1", registrytest.ArtifactHelm),
			f.Artifact("sig:v1", registrytest.ArtifactSignature),
			f.Attested("att:v1", "linux/amd64", "linux/arm64"),
			f.Nested("nested:v1", []string{"linux/amd64"}, []string{"linux/s390x"}),
			f.WideIndex("wide:v1", 20),
			f.Oversized("big:v1", 64<<10),
		} {
			body, mt := f.Manifest(p.Ref[len(m.Host())+1:])
			if mt != p.MediaType {
				t.Errorf("%s: media type %s, want %s", p.Ref, mt, p.MediaType)
			}
			if h, _, _ := v1.SHA256(bytesReader(body)); h.String() != p.Digest {
				t.Errorf("%s: digest %s, want %s", p.Ref, h, p.Digest)
			}
		}
	})
}

func TestAuth(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  registrytest.Option
	}{
		{"basic", registrytest.WithBasicAuth("user", "pass", "private/*")},
		{"bearer", registrytest.WithBearerAuth("user", "pass", "private/*")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := registrytest.NewMemory(t, tc.opt)
			f := m.Fixtures(t)
			pub := f.Image("public/app:v1", registrytest.OCI, "linux/amd64")
			priv := f.Image("private/app:v1", registrytest.OCI, "linux/amd64")

			for _, c := range []struct {
				ref  string
				auth authn.Authenticator
				want int
			}{
				{pub.Ref, authn.Anonymous, http.StatusOK},
				{pub.Ref, &authn.Basic{Username: "user", Password: "pass"}, http.StatusOK},
				{priv.Ref, authn.Anonymous, http.StatusUnauthorized},
				{priv.Ref, &authn.Basic{Username: "user", Password: "wrong"}, http.StatusUnauthorized},
				{priv.Ref, &authn.Basic{Username: "user", Password: "pass"}, http.StatusOK},
			} {
				_, err := get(t, c.ref, c.auth)
				got := http.StatusOK
				if err != nil {
					got = statusOf(err)
				}
				if got != c.want {
					t.Errorf("GET %s as %v: got %d (%v), want %d", c.ref, c.auth, got, err, c.want)
				}
			}
		})
	}
}

func TestFaultsAndRequestLog(t *testing.T) {
	m := registrytest.NewMemory(t)
	p := m.Fixtures(t).Image("app:v1", registrytest.OCI, "linux/amd64")
	m.Requests.Reset()

	m.AddFault(registrytest.Fault{Method: http.MethodGet, Path: "/v2/app/manifests/", Status: http.StatusTooManyRequests,
		Header: http.Header{"Retry-After": {"60"}}, Times: 1})
	m.AddFault(registrytest.Fault{Method: http.MethodGet, Path: "/v2/app/blobs/", Status: http.StatusOK, BodySize: 1 << 20})

	url := "http://" + m.Host() + "/v2/app/manifests/v1"
	resp, err := m.Client().Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" {
		t.Errorf("first GET: %d Retry-After=%q, want 429 60", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, err = m.Client().Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("second GET: %d, want 200 once the fault is used up", resp.StatusCode)
	}
	resp, err = m.Client().Get("http://" + m.Host() + "/v2/app/blobs/" + p.Digest)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n != 1<<20 || resp.ContentLength != -1 {
		t.Errorf("oversized body: %d bytes, Content-Length %d; want %d bytes without a length", n, resp.ContentLength, 1<<20)
	}

	want := map[string]int{
		"GET /v2/app/manifests/v1 429":           1,
		"GET /v2/app/manifests/v1 200":           1,
		"GET /v2/app/blobs/" + p.Digest + " 200": 1,
	}
	if diff := cmp.Diff(want, m.Requests.Counts()); diff != "" {
		t.Errorf("requests (-want,+got):\n%s", diff)
	}
}

func TestSlowFaultEndsWithClient(t *testing.T) {
	m := registrytest.NewMemory(t)
	m.AddFault(registrytest.Fault{Delay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.Host()+"/v2/", nil)
	if _, err := m.Client().Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the client's deadline", err)
	}
	// Cleanup closes the server; it must not wait for the hour.
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

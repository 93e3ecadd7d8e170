//go:build linux

package registrytest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

func TestDistributionSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := StartDistribution(t, DistributionOptions{Username: "pusher", Password: "s3cret"})
	ref, err := name.ParseReference(d.Host() + "/smoke/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	basic := remote.WithAuth(&authn.Basic{Username: "pusher", Password: "s3cret"})
	if err := remote.Write(ref, img, basic, remote.WithContext(ctx)); err != nil {
		t.Fatalf("push: %v", err)
	}

	desc, err := remote.Get(ref, basic, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != want {
		t.Errorf("pulled digest %s, pushed %s", desc.Digest, want)
	}

	for who, opt := range map[string]remote.Option{
		"anonymous":      remote.WithAuth(authn.Anonymous),
		"wrong password": remote.WithAuth(&authn.Basic{Username: "pusher", Password: "wrong"}),
	} {
		_, err := remote.Get(ref, opt, remote.WithContext(ctx))
		var te *transport.Error
		if !errors.As(err, &te) || te.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s read: got %v, want HTTP 401", who, err)
		}
	}

	// The shared fixtures push into it too; Distribution insists that an
	// index's children exist first.
	idx := NewFixtures(t, d.Target()).Index("smoke/multi:v1", Docker, "linux/amd64", "linux/arm64/v8")
	got, err := remote.Index(mustRef(t, idx.DigestRef()), basic, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("pull index: %v", err)
	}
	m, err := got.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 2 {
		t.Errorf("index has %d entries, want 2", len(m.Manifests))
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDistributionWithoutAuth(t *testing.T) {
	d := StartDistribution(t, DistributionOptions{})
	resp, err := http.Get("http://" + d.Host() + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v2/: %d, want 200", resp.StatusCode)
	}
	if got := d.Target(); got.Host != d.Host() || got.Username != "" {
		t.Errorf("Target() = %+v", got)
	}
}

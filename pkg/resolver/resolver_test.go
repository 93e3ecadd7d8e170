package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// TestResolvePlatforms covers the image shapes of the design's "Image platform pitfalls".
func TestResolvePlatforms(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)

	ociIndex := f.Index("oci-index:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	dockerList := f.Index("docker-list:v1", registrytest.Docker, "linux/x86_64", "linux/aarch64", "linux/ppc64le")
	ociSingle := f.Image("oci-single:v1", registrytest.OCI, "linux/arm64/v8")
	dockerSingle := f.Image("docker-single:v1", registrytest.Docker, "linux/s390x")
	dockerArmV6 := f.Image("docker-armv6:v1", registrytest.Docker, "linux/arm/v6")
	schema1 := f.Schema1("schema1:v1", "arm")
	schema1amd := f.Schema1("schema1-amd64:v1", "amd64")
	attested := f.Attested("buildx:v1", "linux/amd64", "linux/arm64")
	nested := f.Nested("nested:v1", []string{"linux/amd64"}, []string{"linux/arm64", "linux/riscv64"})
	sparse := f.Sparse("sparse:v1", []string{"linux/amd64"}, []string{"linux/arm64", "linux/s390x"})
	helm := f.Artifact("helm:v1", registrytest.ArtifactHelm)
	emptyCfg := f.Artifact("empty-config:v1", registrytest.ArtifactEmptyConfig)
	signature := f.Artifact("signature:v1", registrytest.ArtifactSignature)
	wasm := f.Artifact("wasm:v1", registrytest.ArtifactWasm)
	windows := f.Index("windows:v1", registrytest.OCI,
		"windows/amd64:10.0.17763.1234", "windows/amd64:10.0.20348.2113", "linux/amd64")
	arm := f.Index("arm:v1", registrytest.OCI, "linux/arm/v6", "linux/arm/v7", "linux/arm64/v8")
	tdA := f.Index("tag-digest:a", registrytest.OCI, "linux/amd64")
	tdB := f.Index("tag-digest:b", registrytest.OCI, "linux/arm64")
	child := f.Index("child:v1", registrytest.OCI, "linux/amd64", "linux/arm64")

	// Registries that serve manifests with a generic Content-Type.
	indexBody, _ := f.Manifest(relative(m.Host(), ociIndex.Ref))
	jsonIndex := f.Raw("json-index:v1", "application/json", indexBody)
	singleBody, _ := f.Manifest(relative(m.Host(), dockerSingle.Ref))
	plainSingle := f.Raw("text-single:v1", "text/plain; charset=utf-8", singleBody)
	octetSingle := f.Raw("octet-single:v1", "application/octet-stream", singleBody)

	// An index whose entries carry no platform: the children's configs are read.
	unlabelled := f.Image("unlabelled:child", registrytest.OCI, "linux/arm64")
	unlabelledIndex, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": types.OCIImageIndex,
		"manifests": []map[string]any{{"mediaType": unlabelled.MediaType, "digest": unlabelled.Digest, "size": unlabelled.Size}},
	})
	unlabelledIdx := f.Raw("unlabelled:v1", string(types.OCIImageIndex), unlabelledIndex)

	// An index with only attestations names nothing runnable.
	attOnly, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": types.OCIImageIndex,
		"manifests": []map[string]any{{
			"mediaType": unlabelled.MediaType, "digest": unlabelled.Digest, "size": unlabelled.Size,
			"platform":    map[string]string{"os": "unknown", "architecture": "unknown"},
			"annotations": map[string]string{registrytest.ReferenceTypeAnnotation: registrytest.AttestationManifest},
		}},
	})
	attestationsOnly := f.Raw("unlabelled:attestations", string(types.OCIImageIndex), attOnly)

	r := newTestResolver(t, Options{})
	for _, tc := range []struct {
		name  string
		image string
		want  outcome
	}{
		{"OCI index", ociIndex.Ref, ok("linux/amd64", "linux/arm64")},
		{"Docker manifest list, normalised", dockerList.Ref, ok("linux/amd64", "linux/arm64", "linux/ppc64le")},
		{"OCI single-platform image", ociSingle.Ref, ok("linux/arm64")},
		{"Docker single-platform image", dockerSingle.Ref, ok("linux/s390x")},
		{"Docker single-platform arm variant", dockerArmV6.Ref, ok("linux/arm/v6")},
		{"schema1 arm is arm/v7", schema1.Ref, ok("linux/arm/v7")},
		{"schema1 amd64", schema1amd.Ref, ok("linux/amd64")},
		{"buildx attestations are skipped", attested.Ref, ok("linux/amd64", "linux/arm64")},
		{"nested index", nested.Ref, ok("linux/amd64", "linux/arm64", "linux/riscv64")},
		{"sparse index keeps missing children's platforms", sparse.Ref, ok("linux/amd64", "linux/arm64", "linux/s390x")},
		{"Helm chart", helm.Ref, anyPlatform()},
		{"empty config artifact", emptyCfg.Ref, anyPlatform()},
		{"signature artifactType", signature.Ref, anyPlatform()},
		{"wasm artifact", wasm.Ref, anyPlatform()},
		{"Windows os.version", windows.Ref, ok("linux/amd64", "windows/amd64:10.0.17763.1234", "windows/amd64:10.0.20348.2113")},
		{"arm variants", arm.Ref, ok("linux/arm/v6", "linux/arm/v7", "linux/arm64")},
		{"tag+digest means the digest", tdA.Ref + "@" + tdB.Digest, ok("linux/arm64")},
		{"digest of an index", tdB.DigestRef(), ok("linux/arm64")},
		{"digest of a single-platform child", child.ChildRef("linux/arm64"), ok("linux/arm64")},
		{"index served as application/json", jsonIndex.Ref, ok("linux/amd64", "linux/arm64")},
		{"image served as text/plain", plainSingle.Ref, ok("linux/s390x")},
		{"image served as application/octet-stream", octetSingle.Ref, ok("linux/s390x")},
		{"index without platforms reads its children", unlabelledIdx.Ref, ok("linux/arm64")},
		{"index of attestations only", attestationsOnly.Ref, anyPlatform()},
		{"missing tag", m.Host() + "/oci-index:nope", failed(ReasonNotFound)},
		{"missing repository", m.Host() + "/nope:v1", failed(ReasonNotFound)},
		{"missing child digest", sparse.ChildRef("linux/arm64"), failed(ReasonNotFound)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Resolve(testContext(t), Request{Image: tc.image})
			if diff := cmp.Diff(tc.want, outcomeOf(res)); diff != "" {
				t.Errorf("Resolve(%s) (-want,+got):\n%s\nerr: %v", tc.image, diff, res.Err)
			}
			got, found := r.Lookup(Request{Image: tc.image})
			if !found {
				t.Fatalf("Lookup(%s) after Resolve: not found", tc.image)
			}
			if diff := cmp.Diff(tc.want, outcomeOf(got)); diff != "" {
				t.Errorf("Lookup(%s) (-want,+got):\n%s", tc.image, diff)
			}
		})
	}

	t.Run("digest is the manifest's", func(t *testing.T) {
		for _, p := range []registrytest.Pushed{ociIndex, dockerSingle, tdB} {
			if res := r.Resolve(testContext(t), Request{Image: p.Ref}); res.Digest != p.Digest {
				t.Errorf("Resolve(%s).Digest = %s, want %s", p.Ref, res.Digest, p.Digest)
			}
		}
	})
}

func TestResolveFailures(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)
	img := f.Index("app:v1", registrytest.OCI, "linux/amd64")
	big := f.Oversized("big:v1", DefaultMaxManifestBytes+1)
	wide := f.WideIndex("wide:v1", DefaultMaxDescriptors+1)
	garbage := f.Raw("garbage:v1", string(types.OCIManifestSchema1), []byte("this is not JSON"))
	unknown := f.Raw("unknown:v1", "application/json", []byte(`{"schemaVersion":2,"whatever":true}`))

	// Three levels of indexes for a depth limit of one.
	inner := f.Index("deep:inner", registrytest.OCI, "linux/amd64")
	mid := rawIndex(t, f, "deep:mid", inner)
	deep := rawIndex(t, f, "deep:v1", mid)

	closed := registrytest.NewMemory(t)
	closedHost := closed.Host()
	closed.Close()

	for _, tc := range []struct {
		name   string
		opts   Options
		image  string
		fault  *registrytest.Fault
		want   Reason
		status int
	}{
		{name: "404", image: m.Host() + "/app:missing", want: ReasonNotFound, status: http.StatusNotFound},
		{
			name: "500", image: img.Ref, want: ReasonUnreachable, status: http.StatusInternalServerError,
			fault: &registrytest.Fault{Path: "/v2/app/manifests/", Status: http.StatusInternalServerError},
		},
		{
			name: "429 with Retry-After beyond the budget", image: img.Ref, want: ReasonRateLimited, status: http.StatusTooManyRequests,
			fault: &registrytest.Fault{Path: "/v2/app/manifests/", Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"3600"}}},
		},
		{
			name: "slow registry past the budget", image: img.Ref, want: ReasonTimeout,
			opts:  Options{ResolveTimeout: 300 * time.Millisecond},
			fault: &registrytest.Fault{Path: "/v2/app/manifests/", Delay: time.Hour},
		},
		{
			name: "slow ping past the budget", image: img.Ref, want: ReasonTimeout,
			opts:  Options{ResolveTimeout: 300 * time.Millisecond},
			fault: &registrytest.Fault{Path: "/v2/", Delay: time.Hour},
		},
		{name: "refused connection", image: closedHost + "/app:v1", want: ReasonUnreachable},
		{name: "oversized manifest", image: big.Ref, want: ReasonInvalidManifest},
		{
			name: "oversized body without Content-Length", image: img.Ref, want: ReasonInvalidManifest,
			fault: &registrytest.Fault{Path: "/v2/app/manifests/", Status: http.StatusOK, BodySize: 64 << 20,
				Header: http.Header{"Content-Type": {string(types.OCIImageIndex)}}},
		},
		{name: "too many descriptors", image: wide.Ref, want: ReasonInvalidManifest},
		{name: "indexes nested too deep", image: deep.Ref, want: ReasonInvalidManifest, opts: Options{MaxIndexDepth: 1}},
		{name: "not JSON", image: garbage.Ref, want: ReasonInvalidManifest},
		{name: "unrecognised shape", image: unknown.Ref, want: ReasonInvalidManifest},
		{
			name: "content not matching the digest asked for", image: img.DigestRef(), want: ReasonInvalidManifest,
			fault: &registrytest.Fault{Path: "/v2/app/manifests/sha256:", Status: http.StatusOK, Body: []byte(`{"schemaVersion":2,"manifests":[]}`),
				Header: http.Header{"Content-Type": {string(types.OCIImageIndex)}}},
		},
		{
			name: "transport refuses the registry", image: img.Ref, want: ReasonNotAllowed,
			opts: Options{Transport: failingTransport(fmt.Errorf("address 169.254.169.254 is link-local: %w", ErrNotAllowed))},
		},
		{
			name: "transport circuit open", image: img.Ref, want: ReasonCircuitOpen,
			opts: Options{Transport: failingTransport(fmt.Errorf("too many failures: %w", ErrCircuitOpen))},
		},
		{
			name: "transport rate limited", image: img.Ref, want: ReasonRateLimited, status: http.StatusTooManyRequests,
			opts: Options{Transport: failingTransport(fmt.Errorf("Retry-After 600s exceeds the budget: %w", ErrRateLimited))},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fault != nil {
				t.Cleanup(m.AddFault(*tc.fault))
			}
			r := newTestResolver(t, tc.opts)
			res := r.Resolve(testContext(t), Request{Image: tc.image})
			var e *Error
			if !asError(res.Err, &e) {
				t.Fatalf("Resolve(%s) = %+v, want an *Error", tc.image, res)
			}
			if e.Reason != tc.want || e.StatusCode != tc.status {
				t.Errorf("Resolve(%s): reason %s, status %d; want %s, %d\nerr: %v", tc.image, e.Reason, e.StatusCode, tc.want, tc.status, e)
			}
			if e.Image != tc.image || e.CredentialSource != anonymousScope {
				t.Errorf("error names image %q with %q credentials, want %q anonymous", e.Image, e.CredentialSource, tc.image)
			}
			if got, found := r.Lookup(Request{Image: tc.image}); !found || ReasonOf(got.Err) != tc.want {
				t.Errorf("Lookup after failure = %v, %v; want the cached %s", got, found, tc.want)
			}
		})
	}
}

// TestInvalidReferenceMakesNoRequest: what the kubelet refuses to parse, and "localhost/"
// images that only exist on a node, fail at once without a request to any host.
func TestInvalidReferenceMakesNoRequest(t *testing.T) {
	m := registrytest.NewMemory(t)
	var sent []string
	var mu sync.Mutex
	r := newTestResolver(t, Options{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		sent = append(sent, req.URL.String())
		mu.Unlock()
		return nil, errors.New("no request expected")
	})})
	for _, tc := range []struct {
		image string
		want  Reason
	}{
		{"", ReasonInvalidReference},
		{"upper/Case", ReasonInvalidReference},
		{m.Host() + "/app:", ReasonInvalidReference},
		{m.Host() + "/app@sha256:abc", ReasonInvalidReference},
		{m.Host() + "/a//b:v1", ReasonInvalidReference},
		{m.Host() + "/app/:v1", ReasonInvalidReference},
		{"nginx:bad tag", ReasonInvalidReference},
		{"nginx@md5:0123456789abcdef0123456789abcdef", ReasonInvalidReference},
		// Never index.docker.io/localhost/app: the runtime reads localhost as a host.
		{"localhost/app", ReasonLocalImage},
		{"localhost/team/app:v1", ReasonLocalImage},
	} {
		t.Run(tc.image, func(t *testing.T) {
			res := r.Resolve(testContext(t), Request{Image: tc.image})
			if ReasonOf(res.Err) != tc.want {
				t.Errorf("Resolve(%q): %v, want %s", tc.image, res.Err, tc.want)
			}
			if res.Err != nil && tc.want == ReasonInvalidReference && (strings.Contains(res.Err.Error(), "on registry") || !strings.Contains(res.Err.Error(), strconv.Quote(tc.image))) {
				t.Errorf("Resolve(%q): %q, want the reference and no registry (none was asked)", tc.image, res.Err.Error())
			}
			if got, found := r.Lookup(Request{Image: tc.image}); !found || ReasonOf(got.Err) != tc.want {
				t.Errorf("Lookup(%q) = %v, %v; want %s", tc.image, got.Err, found, tc.want)
			}
		})
	}
	if n := m.Requests.Len(); n != 0 {
		t.Errorf("invalid references made %d requests: %v", n, m.Requests.All())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 0 {
		t.Errorf("requests sent: %v", sent)
	}
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
			priv := f.Index("private/app:v1", registrytest.OCI, "linux/arm64")
			pub := f.Index("public/app:v1", registrytest.OCI, "linux/amd64")
			right := cred("right", "user", "pass")
			wrong := cred("wrong", "user", "nope")
			wrong2 := cred("wrong2", "nobody", "nope")

			for _, c := range []struct {
				name       string
				image      string
				creds      Credentials
				want       outcome
				wantSource string
			}{
				{"private with the right credential", priv.Ref, credsFor(m.Host(), right), ok("linux/arm64"), ""},
				{"private anonymously", priv.Ref, nil, failed(ReasonUnauthorized), "anonymous"},
				{"private with credentials for another host", priv.Ref, credsFor("other.example.com", right), failed(ReasonUnauthorized), "anonymous"},
				{"private with a wrong credential", priv.Ref, credsFor(m.Host(), wrong), failed(ReasonUnauthorized), wrong.Source},
				{"private, wrong ones only", priv.Ref, credsFor(m.Host(), wrong, wrong2), failed(ReasonUnauthorized), wrong2.Source},
				{"second candidate works after the first fails", priv.Ref, credsFor(m.Host(), wrong, right), ok("linux/arm64"), ""},
				{"public anonymously", pub.Ref, nil, ok("linux/amd64"), ""},
			} {
				t.Run(c.name, func(t *testing.T) {
					// A fresh resolver per case: the cache would otherwise answer.
					r := newTestResolver(t, Options{})
					res := r.Resolve(testContext(t), Request{Image: c.image, Credentials: c.creds})
					if diff := cmp.Diff(c.want, outcomeOf(res)); diff != "" {
						t.Errorf("(-want,+got):\n%s\nerr: %v", diff, res.Err)
					}
					var e *Error
					if asError(res.Err, &e) {
						if e.CredentialSource != c.wantSource || e.StatusCode != http.StatusUnauthorized {
							t.Errorf("error with source %q status %d, want %q 401", e.CredentialSource, e.StatusCode, c.wantSource)
						}
					}
				})
			}
		})
	}
}

func TestMirrors(t *testing.T) {
	upstream := registrytest.NewMemory(t)
	mirror := registrytest.NewMemory(t, registrytest.WithBasicAuth("m", "mpass"))
	uf, mf := upstream.Fixtures(t), mirror.Fixtures(t)
	both := uf.Index("both:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	mf.Index("both:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	onlyUpstream := uf.Index("upstream-only:v1", registrytest.OCI, "linux/s390x")
	slow := uf.Index("slow:v1", registrytest.OCI, "linux/ppc64le")
	mf.Index("slow:v1", registrytest.OCI, "linux/ppc64le")
	upstream.Requests.Reset()
	mirror.Requests.Reset()

	mirrorCred := cred("mirror", "m", "mpass")
	endpoints := func(registry string) []Endpoint {
		if registry != upstream.Host() {
			return nil
		}
		return []Endpoint{{Host: mirror.Host()}, {Host: upstream.Host()}}
	}
	r := newTestResolver(t, Options{Endpoints: endpoints, ResolveTimeout: 5 * time.Second, RequestTimeout: 300 * time.Millisecond})
	req := func(image string) Request {
		return Request{Image: image, Credentials: creds{mirror.Host(): {mirrorCred}}}
	}

	t.Run("mirror answers first", func(t *testing.T) {
		res := r.Resolve(testContext(t), req(both.Ref))
		if diff := cmp.Diff(ok("linux/amd64", "linux/arm64"), outcomeOf(res)); diff != "" {
			t.Errorf("(-want,+got):\n%s\nerr: %v", diff, res.Err)
		}
		if n := upstream.Requests.Len(); n != 0 {
			t.Errorf("upstream saw %d requests, want 0: %v", n, upstream.Requests.All())
		}
		// The answer came with the mirror's credential; the same pod sees it.
		if _, found := r.Lookup(req(both.Ref)); !found {
			t.Error("Lookup with the mirror credential: not found")
		}
		if _, found := r.Lookup(Request{Image: both.Ref}); found {
			t.Error("Lookup without the mirror credential found an answer obtained with it")
		}
	})

	t.Run("upstream answers what the mirror lacks", func(t *testing.T) {
		res := r.Resolve(testContext(t), req(onlyUpstream.Ref))
		if diff := cmp.Diff(ok("linux/s390x"), outcomeOf(res)); diff != "" {
			t.Errorf("(-want,+got):\n%s\nerr: %v", diff, res.Err)
		}
	})

	t.Run("a hung mirror leaves the upstream time", func(t *testing.T) {
		t.Cleanup(mirror.AddFault(registrytest.Fault{Path: "/v2/slow/", Delay: time.Hour}))
		res := r.Resolve(testContext(t), req(slow.Ref))
		if diff := cmp.Diff(ok("linux/ppc64le"), outcomeOf(res)); diff != "" {
			t.Errorf("(-want,+got):\n%s\nerr: %v", diff, res.Err)
		}
	})
}

func failingTransport(err error) http.RoundTripper {
	return roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, err })
}

// rawIndex pushes an index naming child without a platform.
func rawIndex(t *testing.T, f *registrytest.Fixtures, ref string, child registrytest.Pushed) registrytest.Pushed {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": types.OCIImageIndex,
		"manifests": []map[string]any{{"mediaType": child.MediaType, "digest": child.Digest, "size": child.Size}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f.Raw(ref, string(types.OCIImageIndex), body)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

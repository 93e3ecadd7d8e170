package resolver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/kubernetes/pkg/util/parsers"

	"github.com/archfilter/archfilter/internal/fuzzcheck"
	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/platform"
)

// FuzzParseReference checks parseReference against the kubelet's own parser,
// k8s.io/kubernetes/pkg/util/parsers.ParseImageName (which the kubelet calls before it
// pulls):
//
//   - what the kubelet refuses, the resolver refuses as InvalidReference;
//   - what the kubelet accepts, the resolver accepts (LocalImage for "localhost/…", the
//     documented case), with the same registry (docker.io spelled index.docker.io),
//     repository, and tag or digest; the one documented exception is a port that cannot
//     exist (checkPort), which the kubelet's grammar lets through;
//   - the canonical form re-parses to itself, and the kubelet reads it as the same image;
//   - one parse allocates at most 128 KiB, however long the reference: a parse after a
//     garbage collection refills the regexp matchers' pools (about 40 KiB), a refused
//     reference of maxReferenceLength bytes costs about 40 bytes per byte, and a longer
//     one is refused before parsing.
func FuzzParseReference(f *testing.F) {
	for _, tc := range validReferences {
		f.Add(tc.image)
	}
	for _, image := range invalidReferences {
		f.Add(image)
	}
	for _, image := range localImageReferences {
		f.Add(image)
	}
	for _, image := range []string{
		"registry.example.com:0/app", "registry.example.com:65536/app", "[::1]/app", "[::1]:0/app",
		"localhost", "LOCALHOST/app", "Localhost/app", "index.docker.io/nginx", "docker.io/library/nginx:latest@" + digestA,
		"nginx@sha384:" + strings.Repeat("ab", 48), "a/" + strings.Repeat("b", 250), "registry:5000/a/b/c/d/e:" + strings.Repeat("t", 128),
		// The costliest reference the parser is given: maxReferenceLength bytes, each
		// lower-cased to three and quoted as four.
		"A" + strings.Repeat("\x9e", maxReferenceLength-1),
	} {
		f.Add(image)
	}
	f.Fuzz(func(t *testing.T, image string) {
		var ref *imageRef
		fuzzcheck.Within(t, "parseReference", fuzzcheck.Limits{Alloc: fuzzcheck.PerInputByte([]byte(image), 0, 128*fuzzcheck.KiB)}, func() {
			ref = parseReference(image)
		})
		checkReference(t, image, ref)
		if ref.canonical == "" {
			return
		}
		again := parseReference(ref.canonical)
		checkReference(t, ref.canonical, again)
		if again.canonical != ref.canonical || again.registry() != ref.registry() || again.repository() != ref.repository() ||
			again.tag() != ref.tag() || again.digest() != ref.digest() {
			t.Fatalf("%q parses to canonical %q, which parses to %q (registry %q, repository %q, tag %q, digest %q)",
				image, ref.canonical, again.canonical, again.registry(), again.repository(), again.tag(), again.digest())
		}
		if (again.err == nil) != (ref.err == nil) {
			t.Fatalf("%q: err %v, its canonical form %q: err %v", image, ref.err, ref.canonical, again.err)
		}
	})
}

// checkReference compares what parseReference made of image with what the kubelet makes of it.
func checkReference(t *testing.T, image string, ref *imageRef) {
	t.Helper()
	repo, tag, digest, kerr := parsers.ParseImageName(image)
	if ref.err != nil && (ref.invalid == nil || ref.invalid.Image != image) {
		t.Fatalf("parseReference(%q): err %v without an *Error naming the image (%+v)", image, ref.err, ref.invalid)
	}
	if kerr != nil {
		if ref.err == nil || ref.invalid.Reason != ReasonInvalidReference {
			t.Fatalf("the kubelet refuses %q (%v), the resolver does not: canonical %q, err %v", image, kerr, ref.canonical, ref.err)
		}
		if ref.canonical != "" {
			t.Fatalf("parseReference(%q) refused it but has a canonical form %q", image, ref.canonical)
		}
		return
	}
	registry, repository, _ := strings.Cut(repo, "/")
	if ref.err != nil && ref.invalid.Reason == ReasonInvalidReference {
		if !impossiblePort(registry) {
			t.Fatalf("the kubelet accepts %q (%s, tag %q, digest %q), the resolver refuses it: %v", image, repo, tag, digest, ref.err)
		}
		return
	}
	if registry == "docker.io" {
		registry = "index.docker.io"
	}
	if ref.registry() != registry || ref.repository() != repository {
		t.Fatalf("%q: the kubelet pulls %s from %s, the resolver asks %s for %s", image, repository, registry, ref.registry(), ref.repository())
	}
	if ref.repoName() != registry+"/"+repository {
		t.Fatalf("%q: repoName %q, want %q", image, ref.repoName(), registry+"/"+repository)
	}
	if digest != "" {
		if ref.digest() != digest || ref.tag() != "" || ref.canonical != ref.repoName()+"@"+digest {
			t.Fatalf("%q: the kubelet pulls digest %s, the resolver has tag %q, digest %q (canonical %q)", image, digest, ref.tag(), ref.digest(), ref.canonical)
		}
	} else if ref.tag() != tag || ref.digest() != "" || ref.canonical != ref.repoName()+":"+tag {
		t.Fatalf("%q: the kubelet pulls tag %s, the resolver has tag %q, digest %q (canonical %q)", image, tag, ref.tag(), ref.digest(), ref.canonical)
	}
	if local := registry == localImageHost; local != (ref.err != nil) || local && ref.invalid.Reason != ReasonLocalImage {
		t.Fatalf("%q: registry %q, err %v: LocalImage is for the registry %q, and only for it", image, registry, ref.err, localImageHost)
	}
}

// impossiblePort reports whether host has a port outside 1–65535, which the reference
// grammar allows and no registry can listen on.
func impossiblePort(host string) bool {
	_, port, err := net.SplitHostPort(host)
	if err != nil {
		return false
	}
	n, err := strconv.ParseUint(port, 10, 64)
	return err != nil || n < 1 || n > 65535
}

// The resolver limits of the manifest fuzz targets: small, so that inputs reach them. With
// MaxIndexDepth 1, an input's child index is read but none of its entries is fetched.
const (
	fuzzMaxManifestBytes = 16 << 10
	fuzzMaxDescriptors   = 32
	fuzzMaxIndexDepth    = 1
)

// Placeholders a fuzzed manifest names the other inputs by: the harness replaces them with
// the digests of what it pushed, so that a mutated index still reaches its child and a
// mutated image its config.
const (
	childPlaceholder  = "@child@"
	configPlaceholder = "@config@"
)

// fuzzContentTypes are the Content-Types a fuzzed manifest is served with, chosen by a
// byte of the input: every manifest type the resolver asks for, the artifact manifest, and
// the generic types some registries answer with.
var fuzzContentTypes = []string{
	string(types.OCIImageIndex),
	string(types.DockerManifestList),
	string(types.OCIManifestSchema1),
	string(types.DockerManifestSchema2),
	string(types.DockerManifestSchema1Signed),
	string(types.DockerManifestSchema1),
	ociArtifactManifest,
	"application/json",
	"text/plain; charset=utf-8",
	"application/octet-stream",
	"",
}

// fuzzContentType chooses by the low 7 bits of sel; FuzzManifestWalk gives the top bit of
// its root's selector another meaning.
func fuzzContentType(sel uint8) string { return fuzzContentTypes[int(sel&0x7f)%len(fuzzContentTypes)] }

// contentTypeSel is the selector of mediaType in fuzzContentTypes ("application/json" for
// a type not listed).
func contentTypeSel(mediaType string) uint8 {
	for i, mt := range fuzzContentTypes {
		if mt == mediaType {
			return uint8(i)
		}
	}
	return contentTypeSel("application/json")
}

// fuzzHost is the registry of the manifest fuzz targets' images. It is served in process
// (fuzzRegistry.RoundTrip), so no name is ever resolved.
const fuzzHost = "registry.fuzz.test"

// fuzzRepo is the repository the inputs are pushed to, one at a time.
const fuzzRepo = "fuzz/input"

// fuzzRegistry is go-containerregistry's in-memory registry (pkg/registry, as
// internal/registrytest.NewMemory serves it), which a manifest fuzz target starts once and
// serves its inputs from. Each input gets a resolver of its own (which costs a few maps),
// so that no answer, session or memoised child of one input serves another, and finds the
// repository fuzzRepo empty: what the input pushed is deleted when it ends. (A repository
// per input would change the lengths of names from one input to the next, and with them
// the coverage of the same input.)
//
// The registry is reached in process, through RoundTrip, not over a socket: connection
// reuse, dials and the server's goroutines would make the coverage of one input vary from
// run to run, and the fuzzer take every other input for an interesting one.
type fuzzRegistry struct {
	registry http.Handler

	mu sync.Mutex
	// overlay serves, by URL path, the manifests the registry refused to store: an index
	// naming children it lacks, or one go-containerregistry cannot parse. A registry the
	// resolver talks to need not be so strict.
	overlay map[string]overlaid
}

type overlaid struct {
	contentType string
	body        []byte
}

func newFuzzRegistry() *fuzzRegistry {
	return &fuzzRegistry{
		registry: registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		overlay:  map[string]overlaid{},
	}
}

// RoundTrip answers a request to fuzzHost, over any scheme, from the registry.
func (r *fuzzRegistry) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != fuzzHost {
		return nil, fmt.Errorf("dial %s: only %s is served", req.URL.Host, fuzzHost)
	}
	rec := httptest.NewRecorder()
	r.mu.Lock()
	o, ok := r.overlay[req.URL.Path]
	r.mu.Unlock()
	if ok && req.Method == http.MethodGet {
		rec.Header().Set("Content-Type", o.contentType)
		rec.Header().Set("Content-Length", strconv.Itoa(len(o.body)))
		rec.Header().Set("Docker-Content-Digest", sha256Digest(o.body))
		rec.WriteHeader(http.StatusOK)
		rec.Write(o.body)
	} else {
		r.serveHTTP(rec, req)
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

func (r *fuzzRegistry) serveHTTP(w http.ResponseWriter, req *http.Request) {
	sreq := req.Clone(req.Context())
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	sreq.RequestURI = req.URL.RequestURI()
	r.registry.ServeHTTP(w, sreq)
}

// servedInput is one input as the registry serves it: the bodies with the placeholders
// replaced, and their digests.
type servedInput struct {
	image                                 string
	repo                                  string
	root, child, config                   []byte
	rootType, childType                   string
	rootDigest, childDigest, configDigest string
}

func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// serve pushes config as a blob, child (unless nil) as a manifest by its digest and root
// as the manifest tagged "root", in fuzzRepo, and removes them when t ends.
func (r *fuzzRegistry) serve(t *testing.T, rootType uint8, root []byte, childType uint8, child, config []byte) *servedInput {
	t.Helper()
	s := &servedInput{repo: fuzzRepo, config: config, configDigest: sha256Digest(config)}
	s.child = bytes.ReplaceAll(child, []byte(configPlaceholder), []byte(s.configDigest))
	s.childDigest = sha256Digest(s.child)
	s.root = bytes.ReplaceAll(root, []byte(configPlaceholder), []byte(s.configDigest))
	s.root = bytes.ReplaceAll(s.root, []byte(childPlaceholder), []byte(s.childDigest))
	s.rootDigest = sha256Digest(s.root)
	s.rootType, s.childType = fuzzContentType(rootType), fuzzContentType(childType)
	s.image = fuzzHost + "/" + s.repo + ":root"

	base := "/v2/" + s.repo + "/"
	r.do(t, http.MethodPost, base+"blobs/uploads/?digest="+s.configDigest, "", config, http.StatusCreated)
	t.Cleanup(func() { r.do(t, http.MethodDelete, base+"blobs/"+s.configDigest, "", nil, 0) })
	if child != nil {
		r.putManifest(t, base+"manifests/", s.childDigest, s.childType, s.child)
	}
	r.putManifest(t, base+"manifests/", "root", s.rootType, s.root)
	return s
}

func (r *fuzzRegistry) putManifest(t *testing.T, manifests, ref, contentType string, body []byte) {
	t.Helper()
	if r.do(t, http.MethodPut, manifests+ref, contentType, body, 0) == http.StatusCreated {
		t.Cleanup(func() {
			r.do(t, http.MethodDelete, manifests+ref, "", nil, 0)
			r.do(t, http.MethodDelete, manifests+sha256Digest(body), "", nil, 0)
		})
		return
	}
	r.mu.Lock()
	r.overlay[manifests+ref] = overlaid{contentType: contentType, body: body}
	r.mu.Unlock()
	t.Cleanup(func() {
		r.mu.Lock()
		delete(r.overlay, manifests+ref)
		r.mu.Unlock()
	})
}

// do sends one request of the harness to the registry and returns its status, failing t
// when want is not zero and the status is another.
func (r *fuzzRegistry) do(t *testing.T, method, target, contentType string, body []byte, want int) int {
	t.Helper()
	req := httptest.NewRequest(method, "http://"+fuzzHost+target, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	r.registry.ServeHTTP(rec, req)
	if want != 0 && rec.Code != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, target, rec.Code, want, rec.Body)
	}
	return rec.Code
}

// requestCount is what one resolver asked of the registry.
type requestCount struct {
	// repo is the repository of the image resolved.
	repo string

	mu                      sync.Mutex
	manifests, blobs, other int
	// maxBody is the most bytes read from one response body.
	maxBody int64
	// strays are the URLs of requests for anything but the ping, the image's tag, and
	// manifests and blobs of its repository by a digest the runtime would accept: the
	// resolver must not put a manifest's text into a URL unchecked.
	strays []string
}

// runtimeDigest is a digest as go-digest (and so the container runtime) accepts one, for
// the algorithms the resolver verifies.
var runtimeDigest = regexp.MustCompile(`^(sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128})$`)

func (c *requestCount) expected(u *url.URL) bool {
	if u.Path == "/v2/" && u.RawQuery == "" {
		return true
	}
	rest, ok := strings.CutPrefix(u.Path, "/v2/"+c.repo+"/")
	if !ok || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	if rest == "manifests/root" {
		return true
	}
	kind, digest, _ := strings.Cut(rest, "/")
	return (kind == "manifests" || kind == "blobs") && runtimeDigest.MatchString(digest)
}

type countingTransport struct {
	next http.RoundTripper
	c    *requestCount
}

func (ct countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ct.c.mu.Lock()
	switch {
	case strings.Contains(req.URL.Path, "/manifests/"):
		ct.c.manifests++
	case strings.Contains(req.URL.Path, "/blobs/"):
		ct.c.blobs++
	default:
		ct.c.other++
	}
	if !ct.c.expected(req.URL) {
		ct.c.strays = append(ct.c.strays, req.URL.String())
	}
	ct.c.mu.Unlock()
	resp, err := ct.next.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, c: ct.c}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	c *requestCount
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	b.c.mu.Lock()
	b.c.maxBody = max(b.c.maxBody, b.n)
	b.c.mu.Unlock()
	return n, err
}

// resolve answers s.image with a new resolver, through Describe when describe is set and
// Resolve otherwise, within the allocation and time limits of one input: a fixed 256 KiB
// (the resolver, the handshake, and the registry answering in this process; a seed input
// takes 20 to 100 KiB), 8 KiB per request the options allow (maxFuzzRequests), and 16
// bytes per byte served; and fuzzcheck.DefaultTime.
func (r *fuzzRegistry) resolve(t *testing.T, s *servedInput, describe bool) (Result, *Description, *requestCount) {
	t.Helper()
	count := &requestCount{repo: s.repo}
	var res Result
	var desc *Description
	served := len(s.root) + len(s.child) + len(s.config)
	limit := fuzzcheck.Limits{Alloc: 256*fuzzcheck.KiB + maxFuzzRequests*8*fuzzcheck.KiB + 16*uint64(served)}
	fuzzcheck.Within(t, "resolving a fuzzed manifest", limit, func() {
		rs, err := New(Options{
			Transport:        countingTransport{next: r, c: count},
			ResolveTimeout:   fuzzcheck.DefaultTime,
			MaxManifestBytes: fuzzMaxManifestBytes,
			MaxDescriptors:   fuzzMaxDescriptors,
			MaxIndexDepth:    fuzzMaxIndexDepth,
			Cache:            CacheOptions{MaxEntries: 16},
		})
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Image: s.image}
		if !describe {
			res = rs.Resolve(context.Background(), req)
			return
		}
		d, err := rs.Describe(context.Background(), req)
		res = Result{Platforms: d.Platforms, Digest: d.Digest, Err: err}
		desc = &d
	})
	return res, desc, count
}

// maxFuzzRequests bounds the requests of one resolution under the fuzz targets' options:
// the handshake (a ping, and a token request where the registry wants one), the manifest named and one per index
// entry counted against MaxDescriptors, and one config per manifest.
const maxFuzzRequests = 2 + 2*(1+fuzzMaxDescriptors)

// checkResolution checks what every resolution of a fuzzed manifest must satisfy, whatever
// the bytes: the requests stay within the options (MaxDescriptors bounds the manifests
// fetched, MaxIndexDepth 1 keeps them to the root's own entries, MaxManifestBytes bounds
// what is read of each answer) and name only the image's tag and valid digests; a failure is an *Error naming the image,
// with the Reason a manifest's content can cause (the registry itself is healthy); an
// answer has the digest of the manifest served, and its platforms are normalised and named
// by the manifests or config served.
func checkResolution(t *testing.T, host string, s *servedInput, res Result, desc *Description, count *requestCount) {
	t.Helper()
	if count.manifests > 1+fuzzMaxDescriptors || count.blobs > count.manifests || count.other > 2 {
		t.Fatalf("%d manifest, %d blob and %d other requests; the options allow %d manifests, a blob per manifest and a handshake of 2",
			count.manifests, count.blobs, count.other, 1+fuzzMaxDescriptors)
	}
	var rootDoc oracleDoc
	_ = json.Unmarshal(s.root, &rootDoc)
	if fuzzMaxIndexDepth == 1 && count.manifests > 1+len(rootDoc.Manifests) {
		t.Fatalf("%d manifest requests for a manifest of %d entries: MaxIndexDepth 1 allows only its own entries to be fetched",
			count.manifests, len(rootDoc.Manifests))
	}
	if len(count.strays) > 0 {
		t.Fatalf("requests for what the image's manifests do not name by a valid digest: %q", count.strays)
	}
	if count.maxBody > max(fuzzMaxManifestBytes+1, maxErrorBody) {
		t.Fatalf("read %d bytes of one response, more than MaxManifestBytes %d", count.maxBody, fuzzMaxManifestBytes)
	}
	if res.Err != nil {
		e, ok := res.Err.(*Error)
		if !ok {
			t.Fatalf("failure %T %v is not an *Error", res.Err, res.Err)
		}
		switch e.Reason {
		case ReasonInvalidManifest, ReasonNotFound:
		default:
			t.Fatalf("failure with reason %s from a healthy registry: %v", e.Reason, e)
		}
		if e.Image != s.image || e.Registry != host || e.Err == nil || e.Error() == "" {
			t.Fatalf("failure %+v does not name image %s on %s with a cause", e, s.image, host)
		}
		return
	}
	if len(s.root) > fuzzMaxManifestBytes {
		t.Fatalf("a manifest of %d bytes resolved, more than MaxManifestBytes %d", len(s.root), fuzzMaxManifestBytes)
	}
	if res.Digest != s.rootDigest {
		t.Fatalf("digest %s, but the manifest served is %s", res.Digest, s.rootDigest)
	}
	named := platformsNamed(s.root, s.child, s.config)
	for _, p := range res.Platforms.Platforms() {
		checkPlatform(t, p, named)
	}
	if desc == nil {
		return
	}
	for _, m := range desc.Manifests {
		switch m.Kind {
		case ManifestImage:
			checkPlatform(t, m.Platform, named)
		case ManifestAttestation, ManifestArtifact:
		default:
			t.Fatalf("Describe reports an entry of kind %q", m.Kind)
		}
	}
}

func checkPlatform(t *testing.T, p platform.Platform, named map[string]bool) {
	t.Helper()
	if !reflect.DeepEqual(p, platform.Normalize(p)) {
		t.Fatalf("platform %+v is not normalised (%+v)", p, platform.Normalize(p))
	}
	if !named[platformKey(p)] {
		t.Fatalf("platform %+v is named by none of the manifests and configs served (%v)", p, named)
	}
}

func platformKey(p platform.Platform) string {
	return strings.Join(append([]string{p.OS, p.Architecture, p.Variant, p.OSVersion}, p.OSFeatures...), "\x00")
}

// oraclePlatform and oracleDoc read platforms the way any OCI client would, independently
// of the resolver's wire types: the fields of a platform object, an image config, and a
// schema1 manifest.
type oraclePlatform struct {
	OS           string   `json:"os"`
	Architecture string   `json:"architecture"`
	Variant      string   `json:"variant"`
	OSVersion    string   `json:"os.version"`
	OSFeatures   []string `json:"os.features"`
}

func (p oraclePlatform) normalized(os string) platform.Platform {
	return platform.Normalize(platform.Platform{OS: os, Architecture: p.Architecture, Variant: p.Variant, OSVersion: p.OSVersion, OSFeatures: p.OSFeatures})
}

type oracleDoc struct {
	oraclePlatform
	Manifests []struct {
		Platform *oraclePlatform `json:"platform"`
	} `json:"manifests"`
	History []struct {
		V1Compatibility string `json:"v1Compatibility"`
	} `json:"history"`
}

// platformsNamed returns the keys of every platform docs name, normalised: index entries'
// platforms, a config's (or a schema1 manifest's) os and architecture, with linux for a
// missing OS, and the OS of a schema1 manifest's first history entry.
func platformsNamed(docs ...[]byte) map[string]bool {
	named := map[string]bool{}
	for _, b := range docs {
		var d oracleDoc
		_ = json.Unmarshal(b, &d) // a partial decoding names more, never less
		for _, m := range d.Manifests {
			if m.Platform != nil {
				named[platformKey(m.Platform.normalized(m.Platform.OS))] = true
			}
		}
		oss := []string{d.OS, "linux"}
		for _, h := range d.History {
			var compat struct {
				OS string `json:"os"`
			}
			if json.Unmarshal([]byte(h.V1Compatibility), &compat) == nil {
				oss = append(oss, compat.OS)
			}
		}
		for _, os := range oss {
			named[platformKey(d.normalized(os))] = true
		}
	}
	return named
}

// FuzzManifestWalk serves a fuzzed manifest, a fuzzed child manifest and a fuzzed config
// blob from go-containerregistry's in-memory registry, each Content-Type chosen by a byte,
// and resolves the manifest with the resolver's own Resolve or Describe (the top bit of
// rootType), so the real walk runs: indexes, nested indexes, attestations, artifacts,
// schema1, single-platform images and their configs. The root names the child and the
// config by the placeholders @child@ and @config@. Besides "no panic", checkResolution's
// properties hold, within resolve's allocation and time limits.
func FuzzManifestWalk(f *testing.F) {
	reg := newFuzzRegistry()
	for _, s := range fixtureSeeds(f) {
		f.Add(s.rootType, s.root, s.childType, s.child, s.config)
		f.Add(s.rootType|0x80, s.root, s.childType, s.child, s.config)
	}
	// Hand-written hostile shapes: an index nested past MaxIndexDepth, entries and configs
	// with digests that are not digests, an index listing its own child twice, and one
	// whose only entry is an unlabelled image with an artifact config.
	oci, index, image := contentTypeSel(string(types.OCIImageIndex)), string(types.OCIImageIndex), string(types.OCIManifestSchema1)
	zeros := "sha256:" + strings.Repeat("0", 64)
	for _, seed := range []struct {
		root, child string
	}{
		{`{"schemaVersion":2,"manifests":[{"mediaType":"` + index + `","digest":"@child@"}]}`,
			`{"schemaVersion":2,"manifests":[{"mediaType":"` + image + `","digest":"` + zeros + `"}]}`},
		{`{"schemaVersion":2,"manifests":[{"mediaType":"` + image + `","digest":"sha256:../../blobs/@config@"}]}`, ``},
		{`{"schemaVersion":2,"manifests":[{"mediaType":"` + index + `","digest":":"}]}`, ``},
		{`{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%zz"}}`, ``},
		{`{"schemaVersion":2,"config":{"digest":"@config@\u0000"}}`, ``},
		{`{"schemaVersion":2,"manifests":[{"mediaType":"` + index + `","digest":"@child@"},{"mediaType":"` + index + `","digest":"@child@"}]}`,
			`{"schemaVersion":2,"config":{"digest":"@config@"},"layers":[]}`},
		{`{"schemaVersion":2,"manifests":[{"mediaType":"` + image + `","digest":"@child@"}]}`,
			`{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"@config@"}}`},
	} {
		f.Add(oci, []byte(seed.root), oci, []byte(seed.child), []byte(`{"architecture":"arm64","os":"linux"}`))
	}
	f.Fuzz(func(t *testing.T, rootType uint8, root []byte, childType uint8, child, config []byte) {
		s := reg.serve(t, rootType, root, childType, child, config)
		res, desc, count := reg.resolve(t, s, rootType&0x80 != 0)
		checkResolution(t, fuzzHost, s, res, desc, count)
	})
}

// walkSeed is one input of FuzzManifestWalk.
type walkSeed struct {
	name          string
	rootType      uint8
	root          []byte
	childType     uint8
	child, config []byte
}

// fixtureSeeds builds internal/registrytest's fixtures, real shapes written by
// go-containerregistry (OCI index, Docker manifest list, single-platform images, Windows
// os.version, schema1, buildx attestations, nested and sparse indexes, artifacts) and its
// hostile ones sized for the fuzz options (oversized manifest and config, too many entries,
// mislabelled entries), in a registry of their own, and reads each back as a seed: the
// manifest, its first child and the config it or the child names, with their digests
// replaced by the placeholders.
func fixtureSeeds(tb testing.TB) []walkSeed {
	m := registrytest.NewMemory(tb)
	defer m.Close()
	fx := m.Fixtures(tb)
	host := m.Host()

	unlabelledChild := fx.Image("unlabelled:child", registrytest.OCI, "linux/arm64")
	unlabelled, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": types.OCIImageIndex,
		"manifests": []map[string]any{{"mediaType": unlabelledChild.MediaType, "digest": unlabelledChild.Digest, "size": unlabelledChild.Size}},
	})
	pushed := []struct {
		name string
		p    registrytest.Pushed
	}{
		{"oci-index", fx.Index("oci-index:v1", registrytest.OCI, "linux/amd64", "linux/arm64")},
		{"docker-list", fx.Index("docker-list:v1", registrytest.Docker, "linux/x86_64", "linux/aarch64", "linux/ppc64le")},
		{"oci-single", fx.Image("oci-single:v1", registrytest.OCI, "linux/arm64/v8")},
		{"docker-single", fx.Image("docker-single:v1", registrytest.Docker, "linux/arm/v6")},
		{"windows", fx.Index("windows:v1", registrytest.OCI, "windows/amd64:10.0.17763.1234", "linux/amd64")},
		{"schema1", fx.Schema1("schema1:v1", "arm")},
		{"attested", fx.Attested("buildx:v1", "linux/amd64", "linux/arm64")},
		{"nested", fx.Nested("nested:v1", []string{"linux/amd64"}, []string{"linux/arm64", "linux/riscv64"})},
		{"sparse", fx.Sparse("sparse:v1", []string{"linux/amd64"}, []string{"linux/s390x"})},
		{"unlabelled", fx.Raw("unlabelled:v1", string(types.OCIImageIndex), unlabelled)},
		{"helm", fx.Artifact("helm:v1", registrytest.ArtifactHelm)},
		{"empty-config", fx.Artifact("empty-config:v1", registrytest.ArtifactEmptyConfig)},
		{"signature", fx.Artifact("signature:v1", registrytest.ArtifactSignature)},
		{"wasm", fx.Artifact("wasm:v1", registrytest.ArtifactWasm)},
		{"oversized", fx.Oversized("big:v1", fuzzMaxManifestBytes+1)},
		{"wide", fx.WideIndex("wide:v1", fuzzMaxDescriptors+1)},
		{"mislabelled", fx.Mislabelled("mislabelled:v1", registrytest.Claim{Index: "linux/amd64", Config: "linux/arm64"})},
		{"oversized-config", fx.OversizedConfig("big-config:v1", "linux/amd64", fuzzMaxManifestBytes+1)},
	}
	client := m.Client()
	get := func(repo, kind, ref string) ([]byte, string) {
		resp, err := client.Get("http://" + host + "/v2/" + repo + "/" + kind + "/" + ref)
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, ""
		}
		return b, resp.Header.Get("Content-Type")
	}
	var seeds []walkSeed
	for _, ps := range pushed {
		repo := strings.TrimPrefix(ps.p.Repository, host+"/")
		root, rootType := get(repo, "manifests", ps.p.Digest)
		var doc struct {
			Config    *struct{ Digest string }  `json:"config"`
			Manifests []struct{ Digest string } `json:"manifests"`
		}
		if err := json.Unmarshal(root, &doc); err != nil {
			tb.Fatalf("fixture %s: %v", ps.name, err)
		}
		s := walkSeed{name: ps.name, rootType: contentTypeSel(rootType), root: root, config: []byte("{}")}
		var childDigest, configDigest string
		if len(doc.Manifests) > 0 {
			childDigest = doc.Manifests[0].Digest
			var childType string
			s.child, childType = get(repo, "manifests", childDigest)
			s.childType = contentTypeSel(childType)
			var cdoc struct {
				Config *struct{ Digest string } `json:"config"`
			}
			if json.Unmarshal(s.child, &cdoc) == nil && cdoc.Config != nil {
				configDigest = cdoc.Config.Digest
			}
		}
		if doc.Config != nil {
			configDigest = doc.Config.Digest
		}
		if configDigest != "" {
			if cfg, _ := get(repo, "blobs", configDigest); cfg != nil {
				s.config = cfg
			}
		}
		if s.child != nil {
			s.root = bytes.ReplaceAll(s.root, []byte(childDigest), []byte(childPlaceholder))
		}
		if configDigest != "" {
			s.root = bytes.ReplaceAll(s.root, []byte(configDigest), []byte(configPlaceholder))
			s.child = bytes.ReplaceAll(s.child, []byte(configDigest), []byte(configPlaceholder))
		}
		seeds = append(seeds, s)
	}
	return seeds
}

// fuzzConfigTypes are the config media types FuzzImageConfig's manifest declares, chosen by
// a byte: the three of runnable images (none, OCI, Docker), whose config the resolver
// reads, and those of artifacts, whose config it must not read.
var fuzzConfigTypes = []string{
	"",
	string(types.OCIConfigJSON),
	string(types.DockerConfigJSON),
	registrytest.HelmConfigMediaType,
	registrytest.EmptyConfigMediaType,
	registrytest.WasmConfigMediaType,
	"application/vnd.docker.plugin.v1+json",
}

// FuzzImageConfig serves a fuzzed config blob from the in-memory registry, named by a
// single-platform OCI image manifest whose config media type a byte chooses, and resolves
// the image: walk.imageManifest reads os, architecture, variant, os.version and os.features
// from the config. Besides checkResolution's properties and resolve's limits, the answer is
// exactly what the config says: InvalidManifest for a config over MaxManifestBytes or that
// is not a JSON object of the right field types; Any for one without an architecture, and
// for an artifact's config, which is never fetched; otherwise the one platform of the
// config, normalised, with linux for a missing OS.
func FuzzImageConfig(f *testing.F) {
	reg := newFuzzRegistry()
	for _, s := range fixtureSeeds(f) {
		f.Add(uint8(1), s.config)
	}
	for _, cfg := range []string{
		`{"architecture":"arm64","variant":"8"}`,
		`{"os":"Windows","architecture":"AMD64","os.version":"10.0.17763.1234","os.features":["win32k","win32k"]}`,
		`{"Architecture":"x86_64","OS":"Linux"}`,
		`{"architecture":"armhf"}`,
		`{"os":"linux"}`,
		`{"architecture":1}`,
		`{"os.features":"win32k","architecture":"amd64"}`,
		`null`, `[]`, `""`, ``, `{`,
		`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]},"config":{"Labels":{"padding":"` + strings.Repeat("x", fuzzMaxManifestBytes) + `"}}}`,
	} {
		f.Add(uint8(1), []byte(cfg))
	}
	f.Add(uint8(0), []byte(`{"architecture":"riscv64"}`))
	f.Add(uint8(2), []byte(`{"architecture":"s390x"}`))
	f.Add(uint8(3), []byte(`{"apiVersion":"v2","name":"chart","version":"0.1.0"}`))
	f.Add(uint8(5), []byte(`{"architecture":"wasm","os":"wasip1"}`))
	f.Fuzz(func(t *testing.T, configType uint8, config []byte) {
		mediaType := fuzzConfigTypes[int(configType)%len(fuzzConfigTypes)]
		root, _ := json.Marshal(map[string]any{
			"schemaVersion": 2,
			"mediaType":     types.OCIManifestSchema1,
			"config":        map[string]any{"mediaType": mediaType, "digest": configPlaceholder, "size": len(config)},
			"layers":        []any{},
		})
		s := reg.serve(t, contentTypeSel(string(types.OCIManifestSchema1)), root, 0, nil, config)
		res, _, count := reg.resolve(t, s, false)
		checkResolution(t, fuzzHost, s, res, nil, count)

		var want outcome
		var cfg oraclePlatform
		switch {
		case !isImageConfig(mediaType):
			want = anyPlatform()
		case len(config) > fuzzMaxManifestBytes:
			want = failed(ReasonInvalidManifest)
		case json.Unmarshal(config, &cfg) != nil:
			want = failed(ReasonInvalidManifest)
		case cfg.Architecture == "":
			want = anyPlatform()
		default:
			os := cfg.OS
			if os == "" {
				os = "linux"
			}
			want = outcomeOf(Result{Platforms: platform.NewSet(cfg.normalized(os))})
		}
		if got := outcomeOf(res); !reflect.DeepEqual(got, want) {
			t.Fatalf("config %q of media type %q: got %+v, want %+v (err %v)", config, mediaType, got, want, res.Err)
		}
		if wantBlobs := map[bool]int{true: 1}[isImageConfig(mediaType)]; count.blobs != wantBlobs {
			t.Fatalf("config of media type %q: %d blob requests, want %d", mediaType, count.blobs, wantBlobs)
		}
		if res.Err == nil && len(res.Platforms.Platforms()) == 1 && !reflect.DeepEqual(res.Platforms.Platforms()[0].OSFeatures, cfg.normalized("").OSFeatures) {
			t.Fatalf("config %q: os.features %q, want %q", config, res.Platforms.Platforms()[0].OSFeatures, cfg.normalized("").OSFeatures)
		}
	})
}

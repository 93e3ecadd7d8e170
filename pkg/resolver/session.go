package resolver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"

	"github.com/archfilter/archfilter/internal/bounded"
)

const (
	// sessionTTL makes long-lived sessions handshake again now and then, in case the
	// registry changed its auth scheme; bearer tokens are refreshed on 401 meanwhile.
	sessionTTL = time.Hour
	// maxSessions bounds the handshakes kept: one per repository, endpoint and credential.
	maxSessions = 4096
	// maxRedirects bounds blob redirects (registries redirect blobs to object storage).
	maxRedirects = 5
	// maxErrorBody is how much of an error response is read for its message.
	maxErrorBody = 4 << 10
)

// sessionKey names a repository on an endpoint, as one credential scope sees it.
type sessionKey struct {
	host, repository, scope string
}

// session talks to one repository on one endpoint as one credential. Its RoundTripper
// carries the auth handshake's outcome (Basic credentials, or a bearer token that
// go-containerregistry refreshes on 401), so that a handshake serves every lookup in the
// repository rather than one.
type session struct {
	key    sessionKey
	client *http.Client
	// base is "https://host/v2/repository/"; go-containerregistry's transport switches the
	// scheme to http when the ping found a plain-HTTP registry.
	base    string
	expires time.Time
}

// sessionPool keeps sessions, making each one once even when many resolutions need it at
// the same time.
type sessionPool struct {
	clock clock.PassiveClock
	group singleflight.Group

	mu sync.Mutex
	m  map[sessionKey]*session
}

func newSessionPool(c clock.PassiveClock) *sessionPool {
	return &sessionPool{clock: c, m: make(map[sessionKey]*session)}
}

func (p *sessionPool) get(key sessionKey, create func() (*session, error)) (*session, error) {
	p.mu.Lock()
	s := p.m[key]
	p.mu.Unlock()
	if s != nil && p.clock.Now().Before(s.expires) {
		return s, nil
	}
	v, err, _ := p.group.Do(key.host+"\x00"+key.repository+"\x00"+key.scope, func() (any, error) {
		s, err := create()
		if err != nil {
			return nil, err
		}
		s.key = key
		s.expires = p.clock.Now().Add(sessionTTL)
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.m) >= maxSessions {
			p.evictLocked()
		}
		p.m[key] = s
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*session), nil
}

// evictLocked drops expired sessions, or an arbitrary one when none has expired: losing a
// session costs one handshake.
func (p *sessionPool) evictLocked() {
	now := p.clock.Now()
	bounded.Trim(p.m, maxSessions, func(s *session) bool { return !now.Before(s.expires) })
}

// drop forgets s after the registry refused it, so that the next lookup handshakes again
// (the credential may have been rotated or the token revoked).
func (p *sessionPool) drop(s *session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[s.key] == s {
		delete(p.m, s.key)
	}
}

// newSession performs the auth handshake for ref's repository on ep: a /v2/ ping, then a
// token request when the registry wants bearer tokens.
func newSession(ctx context.Context, rt http.RoundTripper, ep Endpoint, repository string, cred *Credential) (*session, error) {
	var opts []name.Option
	if ep.Insecure {
		opts = append(opts, name.Insecure)
	}
	reg, err := name.NewRegistry(ep.Host, opts...)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", ep.Host, err)
	}
	auth := authn.Anonymous
	if cred != nil {
		auth = authn.FromConfig(authn.AuthConfig{
			Username:      cred.Username,
			Password:      cred.Password,
			IdentityToken: cred.IdentityToken,
			RegistryToken: cred.RegistryToken,
		})
	}
	scopes := []string{reg.Repo(repository).Scope(transport.PullScope)}
	authed, err := transport.NewWithContext(ctx, reg, auth, rt, scopes)
	if err != nil {
		return nil, err
	}
	return &session{
		client: &http.Client{Transport: authed, CheckRedirect: checkRedirect},
		base:   "https://" + ep.Host + "/v2/" + repository + "/",
	}, nil
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// do sends one request and returns the response if it is 200, or a *statusError.
func (s *session) do(ctx context.Context, method, url, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, newStatusError(req, resp)
}

func newStatusError(req *http.Request, resp *http.Response) *statusError {
	e := &statusError{method: req.Method, path: req.URL.Path, status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	var body struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if req.Method != http.MethodHead {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if json.Unmarshal(b, &body) == nil && len(body.Errors) > 0 {
			e.code, e.message = body.Errors[0].Code, body.Errors[0].Message
		}
	}
	return e
}

// errNoDigestHeader: the registry answered HEAD without saying which digest it meant, so
// only a GET can tell.
var errNoDigestHeader = errors.New("HEAD response without Docker-Content-Digest")

// manifest is a fetched manifest body with what the registry said about it.
type manifest struct {
	body        []byte
	contentType string
	digest      string
}

// getManifest GETs a manifest by tag or digest. It reads at most max bytes and checks the
// body against the digest it was asked for, since a mirror's answer is only as good as
// its digest.
func (s *session) getManifest(ctx context.Context, identifier string, max int64) (*manifest, error) {
	resp, err := s.do(ctx, http.MethodGet, s.base+"manifests/"+identifier, acceptHeader)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readLimited(resp, max, "manifest "+identifier)
	if err != nil {
		return nil, err
	}
	m := &manifest{body: body, contentType: resp.Header.Get("Content-Type")}
	sum := sha256.Sum256(body)
	m.digest = "sha256:" + hex.EncodeToString(sum[:])
	if types.MediaType(m.contentType) == types.DockerManifestSchema1Signed {
		// A signed schema1 manifest's digest excludes its signatures: only the registry
		// knows it, so it is believed and not verified.
		if d := resp.Header.Get("Docker-Content-Digest"); d != "" {
			m.digest = d
		}
		return m, nil
	}
	if isDigest(identifier) {
		if err := verifyDigest(body, identifier); err != nil {
			return nil, err
		}
		m.digest = identifier
	}
	return m, nil
}

// headManifest returns the digest a tag or digest currently names, without a GET: Docker
// Hub counts GETs, not HEADs, against pull limits.
func (s *session) headManifest(ctx context.Context, identifier string) (string, error) {
	resp, err := s.do(ctx, http.MethodHead, s.base+"manifests/"+identifier, acceptHeader)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	d := resp.Header.Get("Docker-Content-Digest")
	if d == "" {
		return "", errNoDigestHeader
	}
	return d, nil
}

// getBlob GETs a config blob, following redirects to object storage.
func (s *session) getBlob(ctx context.Context, digest string, max int64) ([]byte, error) {
	resp, err := s.do(ctx, http.MethodGet, s.base+"blobs/"+digest, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readLimited(resp, max, "config "+digest)
	if err != nil {
		return nil, err
	}
	if err := verifyDigest(body, digest); err != nil {
		return nil, err
	}
	return body, nil
}

// readLimited reads a body of at most max bytes, failing without reading further when the
// registry declares or sends more.
func readLimited(resp *http.Response, max int64, what string) ([]byte, error) {
	if resp.ContentLength > max {
		return nil, invalidManifest("%s is %d bytes, more than the limit of %d", what, resp.ContentLength, max)
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, invalidManifest("%s is more than the limit of %d bytes", what, max)
	}
	return buf.Bytes(), nil
}

// validDigest reports whether digest, read from a manifest, is "algorithm:hex" for an
// algorithm verifyDigest checks, with lower-case hex of that algorithm's length: what
// go-digest, and so the container runtime, accepts. A manifest's digests go into request
// URLs, so anything else must be refused before a request is made: text such as ":",
// "sha256:../../x", "sha256:%zz" or a control character would name another path, fail to
// parse as a URL, or draw a 400 or 404 from the registry, and fail as Unreachable or
// NotFound instead of InvalidManifest.
func validDigest(digest string) bool {
	algorithm, encoded, _ := strings.Cut(digest, ":")
	var n int
	switch algorithm {
	case "sha256":
		n = sha256.Size * 2
	case "sha384":
		n = sha512.Size384 * 2
	case "sha512":
		n = sha512.Size * 2
	default:
		return false
	}
	if len(encoded) != n {
		return false
	}
	for i := 0; i < len(encoded); i++ {
		if c := encoded[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isDigest tells a reference's digest from its tag; the parser has checked both.
func isDigest(identifier string) bool {
	for i := 0; i < len(identifier); i++ {
		if identifier[i] == ':' {
			return true
		}
	}
	return false
}

// verifyDigest checks body against "algorithm:hex", for the algorithms a reference may
// name (distribution/reference, go-digest): sha256, sha384 and sha512.
func verifyDigest(body []byte, digest string) error {
	var h hash.Hash
	switch {
	case len(digest) > 7 && digest[:7] == "sha256:":
		h = sha256.New()
	case len(digest) > 7 && digest[:7] == "sha384:":
		h = sha512.New384()
	case len(digest) > 7 && digest[:7] == "sha512:":
		h = sha512.New()
	default:
		return invalidManifest("unsupported digest %q", digest)
	}
	h.Write(body)
	if got := hex.EncodeToString(h.Sum(nil)); got != digest[7:] {
		return invalidManifest("content does not match digest %s", digest)
	}
	return nil
}

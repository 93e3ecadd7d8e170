package resolver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Repository reads an image's repository beyond its platforms: manifests by digest or
// tag, config and layer blobs, and a page of its tags. It is for people asking about one
// image (kubectl archfilter check --deep, narrowing digests, newer tags), not for the
// scheduler. Every request goes through the endpoint, credential, address guard and
// transport that answered OpenRepository, so the rules and limits of Resolve apply; the
// answers are not cached.
type Repository struct {
	r      *Resolver
	req    Request
	ref    *imageRef
	ep     Endpoint
	s      *session
	source string
}

// OpenRepository finds, as Resolve does (mirrors first, then each candidate credential
// on 401 and 403), an endpoint and a credential that may read req's manifest, and
// returns the repository there. The error is an *Error naming the registry, the
// credential source and the reason.
func (r *Resolver) OpenRepository(ctx context.Context, req Request) (*Repository, error) {
	ref := r.refs.get(req.Image)
	if ref.err != nil {
		return nil, ref.invalid
	}
	var last *Error
	for _, ep := range r.endpointsFor(ref.registry()) {
		cands := fetchCandidates(ctx, req, ep.Host)
		for i := 0; i < max(len(cands), 1); i++ {
			var cred *Credential
			scope, source := anonymousScope, anonymousScope
			if len(cands) > 0 {
				cred = &cands[i]
				scope, source = credentialID(cred), cred.Source
			}
			repo, err := r.openOn(ctx, req, ref, ep, scope, source, cred)
			if err == nil {
				return repo, nil
			}
			last = err
			if err.Reason != ReasonUnauthorized || ctx.Err() != nil {
				break
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func (r *Resolver) openOn(ctx context.Context, req Request, ref *imageRef, ep Endpoint, scope, source string, cred *Credential) (*Repository, *Error) {
	s, err := r.session(ctx, ep, ref, scope, cred)
	if err != nil {
		return nil, r.newError(ctx, req, ep, source, err)
	}
	rctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
	defer cancel()
	if _, err := s.headManifest(rctx, ref.identifier()); err != nil && !errors.Is(err, errNoDigestHeader) {
		e := r.newError(rctx, req, ep, source, err)
		if e.Reason == ReasonUnauthorized {
			r.sessions.drop(s)
		}
		return nil, e
	}
	return &Repository{r: r, req: req, ref: ref, ep: ep, s: s, source: source}, nil
}

// Name is "registry/repository" as the reference names it (not the mirror's).
func (p *Repository) Name() string { return p.ref.repoName() }

// Identifier is the tag or digest the reference names (its digest when it has both).
func (p *Repository) Identifier() string { return p.ref.identifier() }

// CredentialSource names the credential the repository is read with ("anonymous").
func (p *Repository) CredentialSource() string { return p.source }

func (p *Repository) fail(ctx context.Context, err error) error {
	return p.r.newError(ctx, p.req, p.ep, p.source, err)
}

// RawManifest is a manifest's body and what the registry said about it.
type RawManifest struct {
	Body []byte
	// MediaType is the body's mediaType field, else the Content-Type header.
	MediaType string
	Digest    string
}

// Manifest GETs the manifest a tag or digest names, at most MaxManifestBytes, verified
// against the digest when one is asked for.
func (p *Repository) Manifest(ctx context.Context, identifier string) (RawManifest, error) {
	rctx, cancel := context.WithTimeout(ctx, p.r.opts.RequestTimeout)
	defer cancel()
	m, err := p.s.getManifest(rctx, identifier, p.r.opts.MaxManifestBytes)
	if err != nil {
		return RawManifest{}, p.fail(rctx, err)
	}
	mt := m.contentType
	var probe struct {
		MediaType string `json:"mediaType"`
	}
	if json.Unmarshal(m.body, &probe) == nil && probe.MediaType != "" {
		mt = probe.MediaType
	}
	return RawManifest{Body: m.body, MediaType: mt, Digest: m.digest}, nil
}

// Config GETs a config blob, at most MaxManifestBytes, verified against its digest.
func (p *Repository) Config(ctx context.Context, digest string) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, p.r.opts.RequestTimeout)
	defer cancel()
	b, err := p.s.getBlob(rctx, digest, p.r.opts.MaxManifestBytes)
	if err != nil {
		return nil, p.fail(rctx, err)
	}
	return b, nil
}

// OpenBlob GETs a blob (a layer) as a stream, which the caller bounds and closes. It is
// not verified against its digest: callers read a prefix of it and stop.
func (p *Repository) OpenBlob(ctx context.Context, digest string) (io.ReadCloser, error) {
	resp, err := p.s.do(ctx, http.MethodGet, p.s.base+"blobs/"+digest, "")
	if err != nil {
		return nil, p.fail(ctx, err)
	}
	return resp.Body, nil
}

// maxTagsPage bounds a tags list's body: a page of a few hundred tags is far smaller.
const maxTagsPage = 1 << 20

// Tags GETs one page of the repository's tags, asking for at most n. A registry that
// refuses the list (401, 403, 404, UNSUPPORTED) fails with an *Error saying so.
func (p *Repository) Tags(ctx context.Context, n int) ([]string, error) {
	rctx, cancel := context.WithTimeout(ctx, p.r.opts.RequestTimeout)
	defer cancel()
	resp, err := p.s.do(rctx, http.MethodGet, p.s.base+"tags/list?"+url.Values{"n": {strconv.Itoa(n)}}.Encode(), "application/json")
	if err != nil {
		return nil, p.fail(rctx, err)
	}
	defer resp.Body.Close()
	body, err := readLimited(resp, maxTagsPage, "tags list")
	if err != nil {
		return nil, p.fail(rctx, err)
	}
	var list struct {
		Tags []string `json:"tags"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, p.fail(rctx, invalidManifest("tags list: %v", err))
	}
	if len(list.Tags) > n {
		list.Tags = list.Tags[:n]
	}
	return list.Tags, nil
}

// String names the repository and how it is read, never a secret.
func (p *Repository) String() string {
	return fmt.Sprintf("%s on %s with %s credentials", p.ref.repoName(), p.ep.Host, p.source)
}

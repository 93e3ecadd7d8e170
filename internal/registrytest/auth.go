package registrytest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"
)

// authScheme is how a protected test registry challenges clients.
type authScheme int

const (
	schemeBasic authScheme = iota + 1
	schemeBearer
)

const (
	basicRealm    = "registrytest"
	bearerService = "registrytest"
	tokenPath     = "/token"
)

// auth protects a registry the way real ones do. Anonymous clients may read public
// repositories; private ones, every write and the catalog need the one account.
//
// With Basic, the /v2/ ping answers 401 so that clients learn the scheme, and requests
// carry the password each time. With Bearer, every /v2/ request needs a token from
// /token, which grants pull on public repositories to anyone and everything to the
// account, like Docker Hub.
type auth struct {
	scheme   authScheme
	username string
	password string
	// private holds path.Match patterns of private repositories; empty means all.
	private []string

	mu     sync.Mutex
	tokens map[string]grant
}

// grant is what a bearer token allows: repository -> actions ("pull", "push").
type grant map[string][]string

func (a *auth) isPrivate(repo string) bool {
	if len(a.private) == 0 {
		return true
	}
	for _, p := range a.private {
		if ok, _ := path.Match(p, repo); ok {
			return true
		}
	}
	return false
}

func (a *auth) validBasic(r *http.Request) (present, valid bool) {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false, false
	}
	return true, subtle.ConstantTimeCompare([]byte(user), []byte(a.username)) == 1 &&
		subtle.ConstantTimeCompare([]byte(pass), []byte(a.password)) == 1
}

func (a *auth) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.scheme == schemeBearer && r.URL.Path == tokenPath {
			a.serveToken(w, r)
			return
		}
		repo, action := classifyRequest(r)
		var ok bool
		switch a.scheme {
		case schemeBasic:
			ok = a.allowBasic(r, repo, action)
		case schemeBearer:
			ok = a.allowBearer(r, repo, action)
		}
		if !ok {
			a.challenge(w, r, repo, action)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (a *auth) allowBasic(r *http.Request, repo, action string) bool {
	present, valid := a.validBasic(r)
	switch {
	case present:
		// Wrong credentials fail even on public repositories, as with htpasswd.
		return valid
	case repo == "":
		// The ping and the catalog: answer 401 so the client learns the scheme.
		return false
	default:
		return action == "pull" && !a.isPrivate(repo)
	}
}

func (a *auth) allowBearer(r *http.Request, repo, action string) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	a.mu.Lock()
	g, ok := a.tokens[tok]
	a.mu.Unlock()
	if !ok {
		return false
	}
	if repo == "" {
		return r.URL.Path == "/v2/" || r.URL.Path == "/v2"
	}
	for _, have := range g[repo] {
		if have == action || have == "*" {
			return true
		}
	}
	return false
}

func (a *auth) challenge(w http.ResponseWriter, r *http.Request, repo, action string) {
	switch a.scheme {
	case schemeBasic:
		w.Header().Set("WWW-Authenticate", fmt.Sprintf("Basic realm=%q", basicRealm))
	case schemeBearer:
		c := fmt.Sprintf("Bearer realm=%q,service=%q", "http://"+r.Host+tokenPath, bearerService)
		if repo != "" {
			c += fmt.Sprintf(",scope=%q", "repository:"+repo+":"+action)
		}
		w.Header().Set("WWW-Authenticate", c)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
}

// serveToken implements the token endpoint of the Docker registry token protocol.
func (a *auth) serveToken(w http.ResponseWriter, r *http.Request) {
	present, valid := a.validBasic(r)
	if present && !valid {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf("Basic realm=%q", basicRealm))
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}`))
		return
	}
	g := grant{}
	for _, scope := range r.URL.Query()["scope"] {
		for _, s := range strings.Fields(scope) {
			// repository:<name>:<actions>; the name may not contain ':'.
			parts := strings.Split(s, ":")
			if len(parts) != 3 || parts[0] != "repository" {
				continue
			}
			repo, actions := parts[1], strings.Split(parts[2], ",")
			if valid {
				g[repo] = append(g[repo], actions...)
				continue
			}
			if !a.isPrivate(repo) {
				g[repo] = append(g[repo], "pull")
			}
		}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	a.mu.Lock()
	if a.tokens == nil {
		a.tokens = map[string]grant{}
	}
	a.tokens[tok] = g
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": tok, "access_token": tok, "expires_in": 300})
}

// classifyRequest returns the repository a /v2/ request is about ("" for the ping and the
// catalog) and the action it needs.
func classifyRequest(r *http.Request) (repo, action string) {
	action = "pull"
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	default:
		action = "push"
	}
	p := strings.TrimPrefix(r.URL.Path, "/v2/")
	for _, kind := range []string{"/manifests/", "/blobs/", "/tags/", "/referrers/"} {
		if i := strings.LastIndex(p, kind); i > 0 {
			return p[:i], action
		}
	}
	return "", action
}

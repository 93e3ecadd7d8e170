package credentials

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"k8s.io/kubernetes/pkg/credentialprovider"

	"github.com/archfilter/archfilter/pkg/resolver"
)

// keyring is the credentials of one source (a secret, a file, a provider
// answer), most specific registry key first, as kubelet orders them.
type keyring []entry

type entry struct {
	// key is the registry key normalised like kubelet's: no scheme, lower-case
	// host, "/v1/" and "/v2/" dropped, e.g. "registry.example.com:5000/team".
	key  string
	auth authn.AuthConfig
	id   string
}

// String never shows secret material, so a keyring is safe to log.
func (k keyring) String() string {
	keys := make([]string, len(k))
	for i, e := range k {
		keys[i] = e.key
	}
	return fmt.Sprintf("keyring%v", keys)
}

func (k keyring) GoString() string { return k.String() }

// Format prints the keyring as String does, whatever the verb: without it, a
// verb String does not serve (%d, %t, a width with %v on the entries) would
// print the entries' fields, passwords included.
func (k keyring) Format(f fmt.State, verb rune) { formatRedacted(f, verb, k.String()) }

// String shows an entry's key only, never its secret material. A lookup's
// []entry prints element by element, so each entry redacts itself too.
func (e entry) String() string { return "entry[" + e.key + "]" }

func (e entry) GoString() string { return e.String() }

// Format prints the entry as String does, whatever the verb.
func (e entry) Format(f fmt.State, verb rune) { formatRedacted(f, verb, e.String()) }

// formatRedacted prints s, the redacted form of a value, for any verb and flags:
// %#v as s itself (GoString's), any other verb as that verb prints a string.
func formatRedacted(f fmt.State, verb rune, s string) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, s)
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), s)
}

// dockerConfigJSON is the kubernetes.io/dockerconfigjson and config.json format.
type dockerConfigJSON struct {
	Auths map[string]authn.AuthConfig `json:"auths"`
}

// parseDockerConfigJSON parses {"auths": {...}}. Errors never quote the input.
func parseDockerConfigJSON(b []byte) (keyring, error) {
	var cfg dockerConfigJSON
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, notDockerConfig(err)
	}
	return newKeyring(cfg.Auths), nil
}

// parseDockercfg parses the legacy kubernetes.io/dockercfg format: the auths
// map alone.
func parseDockercfg(b []byte) (keyring, error) {
	var auths map[string]authn.AuthConfig
	if err := json.Unmarshal(b, &auths); err != nil {
		return nil, notDockerConfig(err)
	}
	return newKeyring(auths), nil
}

// parseDockerConfigFile accepts either format, as docker config files on
// nodes come in both.
func parseDockerConfigFile(b []byte) (keyring, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, notDockerConfig(err)
	}
	if _, ok := probe["auths"]; ok {
		return parseDockerConfigJSON(b)
	}
	return parseDockercfg(b)
}

// errNotDockerConfig is every parse failure: its reason is one of the
// fixed texts notDockerConfig picks, never the decoder's own, whose text can
// quote the secret (a JSON type error names the value, go-containerregistry's
// auth error wraps the base64 decoder's).
var errNotDockerConfig = errors.New("not valid docker config JSON")

// notDockerConfig says why b is not docker config JSON without quoting it:
// a syntax error's byte offset, or which kind of content is wrong.
func notDockerConfig(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("%w: not JSON (syntax error at byte %d)", errNotDockerConfig, syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("%w: a value has the wrong JSON type", errNotDockerConfig)
	case strings.HasPrefix(err.Error(), "unable to decode auth field"):
		return fmt.Errorf("%w: an entry's auth is not base64 of user:password", errNotDockerConfig)
	}
	return errNotDockerConfig
}

func newKeyring(auths map[string]authn.AuthConfig) keyring {
	var k keyring
	// In the order of the locations, not the map's random one: several
	// locations can normalise to one key ("registry.example.com",
	// "https://registry.example.com/v1/"), and the stable sort below keeps
	// theirs, so the same secret always offers its credentials in the same order.
	for _, loc := range slices.Sorted(maps.Keys(auths)) {
		a := auths[loc]
		if a.Username == "" && a.Password == "" && a.IdentityToken == "" && a.RegistryToken == "" {
			continue // e.g. an entry served by a credsStore, which we cannot run
		}
		key, ok := normaliseKey(loc)
		if !ok {
			continue // kubelet skips unparsable keys too
		}
		a.Auth = "" // decoded into Username/Password already
		k = append(k, entry{key: key, auth: a, id: credentialID(key, a)})
	}
	// Reverse order puts "registry.example.com/team" before
	// "registry.example.com", the more specific credential first.
	sort.SliceStable(k, func(i, j int) bool { return k[i].key > k[j].key })
	return k
}

// normaliseKey turns a docker config key ("https://index.docker.io/v1/",
// "registry.example.com/team") into a kubelet match key.
func normaliseKey(loc string) (string, bool) {
	v := loc
	if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
		v = "https://" + v
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return "", false
	}
	p := u.Path
	if strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/v2/") {
		p = p[3:]
	}
	key := strings.ToLower(u.Host)
	if p != "" && p != "/" {
		key += p
	}
	return key, true
}

// dockerHubHosts are the names Docker Hub goes by; a credential keyed by any
// of them serves images of all (kubelet itself falls back to
// "index.docker.io" keys for docker.io images).
var dockerHubHosts = map[string]bool{
	"docker.io":            true,
	"index.docker.io":      true,
	"registry-1.docker.io": true,
}

// splitTarget splits "host[/path]" and lower-cases the host.
func splitTarget(s string) (host, path string) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
	host, path, _ = strings.Cut(s, "/")
	if path != "" {
		path = "/" + path
	}
	return strings.ToLower(host), path
}

// matches applies kubelet's rules: "*" matches one DNS label, ports must be
// equal, and a key's path must prefix the target's. A target without a path
// (a bare registry host, which is what the resolver asks about) matches keys
// on that host whatever their path.
func matches(key, target string) bool {
	kh, kp := splitTarget(key)
	th, tp := splitTarget(target)
	if tp == "" {
		kp = ""
	}
	if urlsMatch(kh+kp, th+tp) {
		return true
	}
	if dockerHubHosts[kh] && dockerHubHosts[th] {
		return urlsMatch("docker.io"+kp, "docker.io"+tp)
	}
	return false
}

func urlsMatch(glob, target string) bool {
	ok, err := credentialprovider.URLsMatchStr(glob, target)
	return err == nil && ok
}

func (k keyring) lookup(target string) []entry {
	var out []entry
	for _, e := range k {
		if matches(e.key, target) {
			out = append(out, e)
		}
	}
	return out
}

func (e entry) credential(source string) resolver.Credential {
	return resolver.Credential{
		Source:        source,
		ID:            e.id,
		Username:      e.auth.Username,
		Password:      e.auth.Password,
		IdentityToken: e.auth.IdentityToken,
		RegistryToken: e.auth.RegistryToken,
	}
}

// idKey keys the credential IDs. A plain hash of a guessable password can be
// reversed by trying candidates; a keyed hash cannot without the key, which
// never leaves the process. IDs only scope the in-memory cache, so they need
// to be stable for the life of the process, not across restarts.
var idKey = func() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("reading random bytes for credential IDs: %v", err))
	}
	return b
}()

// credentialID is a stable, non-reversible identity of the secret material
// and the registry key it is for.
func credentialID(key string, a authn.AuthConfig) string {
	m := hmac.New(sha256.New, idKey)
	for _, s := range []string{key, a.Username, a.Password, a.IdentityToken, a.RegistryToken} {
		// Length prefixes keep ("ab","c") and ("a","bc") apart.
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		m.Write(n[:])
		m.Write([]byte(s))
	}
	return hex.EncodeToString(m.Sum(nil))
}

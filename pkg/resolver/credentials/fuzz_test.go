package credentials

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/internal/fuzzcheck"
)

// pullSecretSeeds are the pull secret data of this package's tests: the docker config
// JSON and legacy dockercfg documents of TestParseDockerConfig, TestCredentialID, the
// malformed secrets and the helpers that build good ones.
func pullSecretSeeds() [][]byte {
	auth := base64.StdEncoding.EncodeToString([]byte("alice:s3cret:with:colons"))
	seeds := [][]byte{
		[]byte(`{"auths":{"registry.example.com":{"username":"bob","password":"pw"}}}`),
		[]byte(`{"auths":{"https://index.docker.io/v1/":{"auth":"` + auth + `"}}}`),
		[]byte(`{"auths":{"a.example.com":{"identitytoken":"idt"},"b.example.com":{"registrytoken":"rt"}}}`),
		[]byte(`{"auths":{"a.example.com":{}},"credsStore":"desktop"}`),
		[]byte(`{"registry.example.com":{"username":"all","password":"1"},"registry.example.com/team":{"username":"team","password":"2"}}`),
		[]byte(`{"auths":`),
		[]byte(`{"a.example.com":{"auth":"!!!"}}`),
		[]byte(`{"auths":{"a.example.com":{"username":"u","password":"p"}}}`),
		[]byte(`{"a.example.com":{"username":"u","password":"p"}}`),
		[]byte(`{"a.example.com": {"username": "u", "password": "p"}, "b.example.com": {"username": "u", "password": "p"},
			"c.example.com": {"username": "u", "password": "q"}, "d.example.com": {"username": "up", "password": ""}}`),
		[]byte(`{"auths":{"registry.example.com":{"username":"a","password":"1"},"https://registry.example.com":{"username":"b","password":"2"},"REGISTRY.example.com/v1/":{"username":"c","password":"3"}}}`),
		[]byte(`{"auths":{"*.example.com:5000":{"username":"u","password":"p"},"http://Registry.Example.com:5000/v2/team/":{"username":"t","password":"q"},"[::1]:5000":{"username":"l","password":"o"}}}`),
	}
	bad, _ := malformedSecrets()
	good := pullSecret("default", "good", map[string]string{"r.example.com": "good-user:good-password", "docker.io": "hub:pw"})
	legacy := dockercfgSecret("default", "legacy", "https://index.docker.io/v1/", "u", "p")
	for _, o := range append(bad, good, legacy) {
		for _, data := range o.(*v1.Secret).Data {
			seeds = append(seeds, data)
		}
	}
	return seeds
}

// notQuoting are the only texts a parse error may have: none quotes the input.
var notQuoting = regexp.MustCompile(`^not valid docker config JSON(: not JSON \(syntax error at byte [0-9]+\)|: a value has the wrong JSON type|: an entry's auth is not base64 of user:password)?$`)

// printVerbs are the ways a keyring, an entry or a lookup's entries could be printed.
var printVerbs = []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%t", "%10.3v", "%-8s", "%T"}

// FuzzPullSecret feeds the data of a pull secret (or a node's docker config file) to the
// three parsers. Besides "no panic":
//   - one input allocates at most 256 bytes per input byte plus 1 MiB, within
//     fuzzcheck.DefaultTime, for the three parsers together (measured: at most 175 per
//     byte, for a document of many ~20-byte entries, each costing ~1.3 KiB per parse:
//     AuthConfig's second JSON decoding, url.Parse, the HMAC of its ID);
//   - an error is one of the fixed texts, which never quote the input;
//   - parseDockerConfigFile is parseDockerConfigJSON for a document with "auths" and
//     parseDockercfg for any other;
//   - parsing is deterministic: the same bytes give the same keyring, in the same order;
//   - however a keyring, one of its entries or a lookup's entries are printed, whatever
//     the verb, the output shows no username, password or token: it is what the same
//     keyring with every secret blanked prints;
//   - round trip: the keyring written back as a dockerconfigjson (its keys, usernames,
//     passwords and tokens) parses to the same keyring, as far as a key normalises to
//     itself (kubelet's normalisation drops one /v1/ or /v2/ and unescapes the path, so
//     "host/v1/v2/x" and "host/%2541" are not fixed points) and is the only one of its
//     name; the credential compared is what goes on the wire (user:password, tokens),
//     since a username with a colon splits there in the "auth" field as in HTTP Basic.
func FuzzPullSecret(f *testing.F) {
	for _, s := range pullSecretSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			jsonRing, cfgRing, fileRing    keyring
			jsonErr, cfgErr, fileErr       error
			jsonAgain, cfgAgain, fileAgain keyring
		)
		fuzzcheck.Within(t, "parsing a pull secret", fuzzcheck.Limits{Alloc: fuzzcheck.PerInputByte(data, 256, fuzzcheck.MiB)}, func() {
			jsonRing, jsonErr = parseDockerConfigJSON(data)
			cfgRing, cfgErr = parseDockercfg(data)
			fileRing, fileErr = parseDockerConfigFile(data)
		})
		jsonAgain, _ = parseDockerConfigJSON(data)
		cfgAgain, _ = parseDockercfg(data)
		fileAgain, _ = parseDockerConfigFile(data)

		for _, err := range []error{jsonErr, cfgErr, fileErr} {
			if err == nil {
				continue
			}
			if !errors.Is(err, errNotDockerConfig) || !notQuoting.MatchString(err.Error()) {
				t.Errorf("parse error %q is not one of the fixed texts", err)
			}
		}

		// Which format the file parser took.
		var probe map[string]json.RawMessage
		if json.Unmarshal(data, &probe) == nil {
			wantRing, wantErr := cfgRing, cfgErr
			if _, ok := probe["auths"]; ok {
				wantRing, wantErr = jsonRing, jsonErr
			}
			if (fileErr != nil) != (wantErr != nil) || !equalRings(fileRing, wantRing) {
				t.Errorf("parseDockerConfigFile = %v, %v; want the format's parser's %v, %v", fileRing, fileErr, wantRing, wantErr)
			}
		} else if fileErr == nil {
			t.Errorf("parseDockerConfigFile accepted what is not a JSON object")
		}

		for _, c := range []struct {
			name        string
			ring, again keyring
			err         error
		}{
			{"dockerconfigjson", jsonRing, jsonAgain, jsonErr},
			{"dockercfg", cfgRing, cfgAgain, cfgErr},
			{"docker config file", fileRing, fileAgain, fileErr},
		} {
			if c.err != nil {
				if c.ring != nil {
					t.Errorf("%s: an error and a keyring %v", c.name, c.ring)
				}
				continue
			}
			if !equalRings(c.ring, c.again) {
				t.Errorf("%s: parsing the same bytes twice gave %s and %s", c.name, describeRing(c.ring), describeRing(c.again))
			}
			checkPrintsNoSecret(t, c.name, c.ring)
			checkRoundTrip(t, c.name, c.ring)
		}
	})
}

// equalRings compares keyrings entry by entry, in order, secrets and IDs included.
func equalRings(a, b keyring) bool {
	return slices.EqualFunc(a, b, func(x, y entry) bool { return x == y })
}

// describeRing shows a keyring with its secrets, for failure messages of this test only.
func describeRing(k keyring) string {
	var parts []string
	for _, e := range k {
		parts = append(parts, fmt.Sprintf("%q:{%q %q %q %q}", e.key, e.auth.Username, e.auth.Password, e.auth.IdentityToken, e.auth.RegistryToken))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// checkPrintsNoSecret: whatever the verb, a keyring, its entries and a lookup's entries
// print as they would with every username, password and token blanked.
func checkPrintsNoSecret(t *testing.T, name string, ring keyring) {
	t.Helper()
	blank := slices.Clone(ring)
	for i := range blank {
		blank[i].auth = authn.AuthConfig{}
	}
	var target string
	if len(ring) > 0 {
		target = ring[0].key
	}
	for _, verb := range printVerbs {
		for _, pair := range [][2]any{
			{ring, blank},
			{ring.lookup(target), blank.lookup(target)},
			{[]entry(ring), []entry(blank)},
		} {
			got, want := fmt.Sprintf(verb, pair[0]), fmt.Sprintf(verb, pair[1])
			if got != want {
				t.Errorf("%s: Sprintf(%q) shows secret material: %s, want %s", name, verb, got, want)
			}
		}
		for i := range ring {
			if got, want := fmt.Sprintf(verb, ring[i]), fmt.Sprintf(verb, blank[i]); got != want {
				t.Errorf("%s: Sprintf(%q) of an entry shows secret material: %s, want %s", name, verb, got, want)
			}
		}
	}
	if got, want := ring.String(), "keyring"+fmt.Sprint(keysOf(ring)); got != want {
		t.Errorf("%s: String() = %q, want the keys only, %q", name, got, want)
	}
	if got, want := ring.GoString(), ring.String(); got != want {
		t.Errorf("%s: GoString() = %q, want String()'s %q", name, got, want)
	}
}

func keysOf(k keyring) []string {
	keys := make([]string, len(k))
	for i, e := range k {
		keys[i] = e.key
	}
	return keys
}

// wire is what an entry sends to a registry: its key, the basic auth user:password (if
// any) and its tokens.
type wire struct{ Key, Basic, IdentityToken, RegistryToken string }

func wireOf(e entry) wire {
	w := wire{Key: e.key, IdentityToken: e.auth.IdentityToken, RegistryToken: e.auth.RegistryToken}
	if e.auth.Username != "" || e.auth.Password != "" {
		w.Basic = e.auth.Username + ":" + e.auth.Password
	}
	return w
}

// checkRoundTrip writes ring back as a dockerconfigjson and parses it.
func checkRoundTrip(t *testing.T, name string, ring keyring) {
	t.Helper()
	count := map[string]int{}
	for _, e := range ring {
		count[e.key]++
	}
	auths := map[string]authn.AuthConfig{}
	var want []wire
	for _, e := range ring {
		if key, ok := normaliseKey(e.key); !ok || key != e.key || count[e.key] > 1 {
			continue
		}
		auths[e.key] = authn.AuthConfig{Username: e.auth.Username, Password: e.auth.Password, IdentityToken: e.auth.IdentityToken, RegistryToken: e.auth.RegistryToken}
		want = append(want, wireOf(e))
	}
	b, err := json.Marshal(dockerConfigJSON{Auths: auths})
	if err != nil {
		t.Fatalf("%s: marshalling the keyring: %v", name, err)
	}
	again, err := parseDockerConfigJSON(b)
	if err != nil {
		t.Fatalf("%s: the keyring written back as %s does not parse: %v", name, b, err)
	}
	var got []wire
	for _, e := range again {
		got = append(got, wireOf(e))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: round trip through %s (-want,+got):\n%s", name, b, diff)
	}
}

package credentials

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMatches(t *testing.T) {
	tests := []struct {
		key, target string
		want        bool
	}{
		{"registry.example.com", "registry.example.com", true},
		{"registry.example.com", "registry.example.com/team/app", true},
		{"registry.example.com", "other.example.com", false},
		{"*.example.com", "registry.example.com", true},
		{"*.example.com", "a.b.example.com", false}, // one label only
		{"*.example.com", "example.com", false},
		{"*.*.example.com", "a.b.example.com", true},
		{"reg-*.example.com", "reg-eu.example.com", true},
		{"registry.example.com:5000", "registry.example.com:5000", true},
		{"registry.example.com:5000", "registry.example.com", false}, // ports must match
		{"registry.example.com", "registry.example.com:5000", false},
		{"*.example.com", "registry.example.com:5000", false},
		{"*.example.com:5000", "registry.example.com:5000", true},
		{"registry.example.com/team", "registry.example.com/team/app", true},
		{"registry.example.com/team", "registry.example.com/other/app", false},
		{"registry.example.com/team", "registry.example.com/teammate/app", true}, // kubelet: string prefix
		{"registry.example.com/team", "registry.example.com", true},              // host-only lookups see path-scoped keys
		{"Registry.Example.com", "registry.example.com", true},
		{"registry.example.com", "REGISTRY.example.com", true},
		{"docker.io", "index.docker.io", true},
		{"index.docker.io", "index.docker.io", true},
		{"registry-1.docker.io", "index.docker.io", true},
		{"index.docker.io", "docker.io/library/nginx", true},
		{"docker.io/library", "index.docker.io/library/nginx", true},
		{"docker.io/other", "index.docker.io/library/nginx", false},
		{"*.docker.io", "docker.io", false},
		{"docker.io", "quay.io", false},
		{"[::1]:5000", "[::1]:5000", true},
		{"10.0.0.5:5000", "10.0.0.5:5000", true},
	}
	for _, tc := range tests {
		t.Run(tc.key+" "+tc.target, func(t *testing.T) {
			if got := matches(tc.key, tc.target); got != tc.want {
				t.Errorf("matches(%q, %q) = %v, want %v", tc.key, tc.target, got, tc.want)
			}
		})
	}
}

func TestNormaliseKey(t *testing.T) {
	tests := map[string]string{
		"https://index.docker.io/v1/":        "index.docker.io",
		"index.docker.io":                    "index.docker.io",
		"http://registry.example.com:5000":   "registry.example.com:5000",
		"registry.example.com/v2/team":       "registry.example.com/team",
		"Registry.Example.com/Team":          "registry.example.com/Team",
		"https://registry.example.com/team/": "registry.example.com/team/",
	}
	for in, want := range tests {
		got, ok := normaliseKey(in)
		if !ok || got != want {
			t.Errorf("normaliseKey(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestParseDockerConfig(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("alice:s3cret:with:colons"))
	type cred struct{ Key, User, Pass, IdentityToken, RegistryToken string }
	tests := []struct {
		name    string
		parse   func([]byte) (keyring, error)
		data    string
		want    []cred
		wantErr bool
	}{
		{
			name:  "dockerconfigjson with username and password",
			parse: parseDockerConfigJSON,
			data:  `{"auths":{"registry.example.com":{"username":"bob","password":"pw"}}}`,
			want:  []cred{{Key: "registry.example.com", User: "bob", Pass: "pw"}},
		},
		{
			name:  "dockerconfigjson with auth field only",
			parse: parseDockerConfigJSON,
			data:  `{"auths":{"https://index.docker.io/v1/":{"auth":"` + auth + `"}}}`,
			want:  []cred{{Key: "index.docker.io", User: "alice", Pass: "s3cret:with:colons"}},
		},
		{
			name:  "tokens",
			parse: parseDockerConfigJSON,
			data:  `{"auths":{"a.example.com":{"identitytoken":"idt"},"b.example.com":{"registrytoken":"rt"}}}`,
			want:  []cred{{Key: "b.example.com", RegistryToken: "rt"}, {Key: "a.example.com", IdentityToken: "idt"}},
		},
		{
			name:  "entries without credentials are skipped",
			parse: parseDockerConfigJSON,
			data:  `{"auths":{"a.example.com":{}},"credsStore":"desktop"}`,
		},
		{
			name:  "more specific keys first",
			parse: parseDockercfg,
			data:  `{"registry.example.com":{"username":"all","password":"1"},"registry.example.com/team":{"username":"team","password":"2"}}`,
			want: []cred{
				{Key: "registry.example.com/team", User: "team", Pass: "2"},
				{Key: "registry.example.com", User: "all", Pass: "1"},
			},
		},
		{name: "not JSON", parse: parseDockerConfigJSON, data: `{"auths":`, wantErr: true},
		{name: "bad auth field", parse: parseDockercfg, data: `{"a.example.com":{"auth":"!!!"}}`, wantErr: true},
		{name: "config.json file", parse: parseDockerConfigFile, data: `{"auths":{"a.example.com":{"username":"u","password":"p"}}}`, want: []cred{{Key: "a.example.com", User: "u", Pass: "p"}}},
		{name: "legacy .dockercfg file", parse: parseDockerConfigFile, data: `{"a.example.com":{"username":"u","password":"p"}}`, want: []cred{{Key: "a.example.com", User: "u", Pass: "p"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ring, err := tc.parse([]byte(tc.data))
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []cred
			for _, e := range ring {
				got = append(got, cred{e.key, e.auth.Username, e.auth.Password, e.auth.IdentityToken, e.auth.RegistryToken})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestCredentialID(t *testing.T) {
	ring, err := parseDockercfg([]byte(`{
		"a.example.com": {"username": "u", "password": "p"},
		"b.example.com": {"username": "u", "password": "p"},
		"c.example.com": {"username": "u", "password": "q"},
		"d.example.com": {"username": "up", "password": ""}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := parseDockercfg([]byte(`{"a.example.com": {"username": "u", "password": "p"}}`))
	ids := map[string]string{}
	for _, e := range ring {
		if len(e.id) != 64 {
			t.Errorf("ID %q is not hex SHA-256", e.id)
		}
		if other, dup := ids[e.id]; dup {
			t.Errorf("%s and %s share an ID", e.key, other)
		}
		ids[e.id] = e.key
	}
	if ids[again[0].id] != "a.example.com" {
		t.Error("the same secret material and key got a different ID")
	}
}

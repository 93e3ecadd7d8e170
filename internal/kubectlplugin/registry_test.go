package kubectlplugin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// TestRefusalNamesTheFlags: a registry's 401 names the image, the registry and the
// credential source tried, and the flags that give credentials; the resolver's own
// error (the scheduler's events) is unchanged beneath it.
func TestRefusalNamesTheFlags(t *testing.T) {
	m := registrytest.NewMemory(t, registrytest.WithBasicAuth("ci", "s3cret"))
	fx := pushFixtures(t, m)

	t.Run("inspect, anonymous", func(t *testing.T) {
		_, stderr, code := run(t, "", "inspect", "--insecure-registry", fx.host, fx.multiRef)
		if code != ExitInputError {
			t.Errorf("exit status %d, want %d", code, ExitInputError)
		}
		for _, want := range []string{
			fx.multiRef, "registry " + fx.host, "with anonymous credentials", "Unauthorized (HTTP 401)",
			fx.host + " refused anonymous access: give credentials with --docker-config FILE (a docker config.json with an entry for " + fx.host + ")",
			"--pull-secret NAMESPACE/NAME", "--for-pod POD",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr)
			}
		}
	})

	t.Run("inspect, a credential the registry refuses", func(t *testing.T) {
		writeDockerConfig(t, fx.host, "ci", "wrong")
		_, stderr, code := run(t, "", "inspect", "--insecure-registry", fx.host, fx.multiRef)
		if code != ExitInputError {
			t.Errorf("exit status %d, want %d", code, ExitInputError)
		}
		for _, want := range []string{"refused docker config", "check that it holds a credential for " + fx.host, "or give another with --docker-config FILE"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr)
			}
		}
	})

	t.Run("why and report: the pod's own credentials, no --for-pod", func(t *testing.T) {
		reg := registryFlags{insecure: []string{fx.host}, timeout: resolver.DefaultResolveTimeout}
		s, err := reg.newSessionWith(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		res := s.resolver.Resolve(context.Background(), resolver.Request{Image: fx.multiRef})
		var re *resolver.Error
		if !errors.As(res.Err, &re) || re.Reason != resolver.ReasonUnauthorized {
			t.Fatalf("error %v does not unwrap to the resolver's Unauthorized", res.Err)
		}
		msg := res.Err.Error()
		if !strings.HasPrefix(msg, re.Error()+"; ") || !strings.Contains(msg, "--docker-config") || !strings.Contains(msg, "--pull-secret") {
			t.Errorf("error %q: want the resolver's message, then the flags", msg)
		}
		if strings.Contains(msg, "--for-pod") {
			t.Errorf("error %q names --for-pod, which why and report do not use", msg)
		}
	})
}

// TestInvalidReference: an invalid reference is printed with why it is invalid, and
// no empty registry name.
func TestInvalidReference(t *testing.T) {
	for _, tc := range []struct{ image, why string }{
		{"shop/Web:v1", "repository name (shop/Web) must be lowercase"},
		{"nginx::1.27", "invalid reference format"},
		{"registry.example.com:99999/app:v1", "99999"},
	} {
		t.Run(tc.image, func(t *testing.T) {
			_, stderr, code := run(t, "", "inspect", tc.image)
			if code != ExitInputError {
				t.Errorf("exit status %d, want %d", code, ExitInputError)
			}
			want := "error: invalid image reference " + `"` + tc.image + `": `
			if !strings.Contains(stderr, want) || !strings.Contains(stderr, tc.why) || !strings.Contains(stderr, "[REGISTRY[:PORT]/]REPOSITORY[:TAG][@DIGEST]") {
				t.Errorf("stderr does not say %q, %q and the form of a reference:\n%s", want, tc.why, stderr)
			}
			if strings.Contains(stderr, "registry  ") || strings.Contains(stderr, "on registry with") {
				t.Errorf("stderr names an empty registry:\n%s", stderr)
			}
		})
	}
}

func TestPullSecretHelpSaysGet(t *testing.T) {
	stdout, _, _ := run(t, "", "inspect", "--help")
	line := ""
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, "--pull-secret") {
			line = l
		}
	}
	if !strings.Contains(line, "needs get on that secret") || strings.Contains(line, "list") {
		t.Errorf("--pull-secret's help: %q; want it to need get, not list, on the secret", line)
	}
}

// TestCredentialsHint: the hint for each kind of refusal, as explain writes it.
func TestCredentialsHint(t *testing.T) {
	for _, tc := range []struct {
		name      string
		forPod    bool
		err       *resolver.Error
		want, not []string
	}{
		{name: "Docker Hub, anonymous: maybe a misspelt name", forPod: true,
			err:  &resolver.Error{Image: "ngnix:1.27", Registry: "index.docker.io", CredentialSource: "anonymous", StatusCode: 401, Reason: resolver.ReasonUnauthorized},
			want: []string{`resolving image "ngnix:1.27"`, "index.docker.io refused anonymous access", "--docker-config FILE", "--pull-secret NAMESPACE/NAME", "--for-pod POD", "Docker Hub answers 401 also for a repository that does not exist: check the image's name"}},
		{name: "403 with a pod's secret, why or report",
			err:  &resolver.Error{Image: "ghcr.io/acme/api:v2", Registry: "ghcr.io", CredentialSource: "secret shop/regcred", StatusCode: 403, Reason: resolver.ReasonUnauthorized},
			want: []string{"ghcr.io refused secret shop/regcred: check that it holds a credential for ghcr.io that may pull this repository", "or give another with --docker-config FILE"},
			not:  []string{"--for-pod", "Docker Hub"}},
		{name: "not found: no hint",
			err: &resolver.Error{Image: "ghcr.io/acme/api:v2", Registry: "ghcr.io", CredentialSource: "anonymous", StatusCode: 404, Reason: resolver.ReasonNotFound},
			not: []string{"--docker-config", "refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &cliResolver{forPod: tc.forPod}
			err := r.explain(tc.err)
			var re *resolver.Error
			if !errors.As(err, &re) || re != tc.err {
				t.Errorf("%v does not unwrap to the resolver's error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("%q says %q", err, n)
				}
			}
		})
	}
}

// TestUsageMistakes: inspect's own usage mistakes say what to type.
func TestUsageMistakes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "no image", args: []string{"inspect"}, want: "inspect needs the images to inspect: kubectl archfilter inspect IMAGE..., e.g. kubectl archfilter inspect nginx:1.27"},
		{name: "--pull-secret without its namespace", args: []string{"inspect", "--pull-secret", "regcred", "nginx"}, want: `--pull-secret "regcred": want NAMESPACE/NAME, the secret's namespace and name, e.g. --pull-secret NAMESPACE/regcred`},
		{name: "an unknown flag", args: []string{"inspect", "--bogus", "nginx"}, want: "unknown flag: --bogus\nSee 'kubectl archfilter inspect --help' for usage."},
		{name: "-v without its level", args: []string{"report", "-v"}, want: "See 'kubectl archfilter report --help' for usage."},
		{name: "a misspelt command", args: []string{"inspec", "nginx"}, want: "Did you mean this?\n\tinspect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, "", tc.args...)
			if code != ExitInputError || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit status %d, want %d and %q; stderr:\n%s", code, ExitInputError, tc.want, stderr)
			}
		})
	}
}

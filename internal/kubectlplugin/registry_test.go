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

package transport

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archfilter/archfilter/pkg/resolver"
)

func TestEndpoints(t *testing.T) {
	tr := newTransport(t, Options{Registries: []Registry{
		{Host: "docker.io", Mirrors: []string{"mirror.internal:5000", "backup.internal"}},
		{Host: "mirror.internal:5000", Insecure: true},
		{Host: "registry.internal", Insecure: true},
		{Host: "ghcr.io", Mirrors: []string{"registry.internal"}},
	}})
	tests := []struct {
		registry string
		want     []resolver.Endpoint
	}{
		{registry: "index.docker.io", want: []resolver.Endpoint{
			{Host: "mirror.internal:5000", Insecure: true},
			{Host: "backup.internal"},
			{Host: "index.docker.io"},
		}},
		{registry: "docker.io", want: []resolver.Endpoint{
			{Host: "mirror.internal:5000", Insecure: true},
			{Host: "backup.internal"},
			{Host: "docker.io"},
		}},
		{registry: "GHCR.io", want: []resolver.Endpoint{
			{Host: "registry.internal", Insecure: true},
			{Host: "GHCR.io"},
		}},
		{registry: "registry.internal", want: []resolver.Endpoint{{Host: "registry.internal", Insecure: true}}},
		{registry: "quay.io", want: []resolver.Endpoint{{Host: "quay.io"}}},
	}
	for _, tc := range tests {
		t.Run(tc.registry, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tr.Endpoints(tc.registry)); diff != "" {
				t.Errorf("Endpoints(%q) (-want,+got):\n%s", tc.registry, diff)
			}
		})
	}
}

package registryclient

import (
	"strings"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/apis/config"
)

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    config.ArchFilterArgs
		wantErr string
	}{
		{name: "defaults", args: config.ArchFilterArgs{Workers: 1}},
		{name: "registry CA file missing", args: config.ArchFilterArgs{Workers: 1, Registries: []config.RegistryConfig{{Host: "r.example", CAFile: "/nonexistent/ca.pem"}}}, wantErr: "args: "},
		{name: "docker config file missing", args: config.ArchFilterArgs{Workers: 1, DockerConfigFile: "/nonexistent/config.json"}, wantErr: "args credentials: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := fake.NewClientset()
			c, err := New(ctx, &tc.args, client, informers.NewSharedInformerFactory(client, 0))
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("New error = %v, want prefix %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Resolver == nil || c.Credentials == nil {
				t.Fatalf("New = %+v, want a resolver and credentials", c)
			}
		})
	}
}

package framework

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	ggcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(os, arch, build string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelOS: os, LabelArch: arch}}}
	if build != "" {
		n.Labels[LabelWindowsBuild] = build
	}
	return n
}

func TestImageRunsOn(t *testing.T) {
	tests := []struct {
		name  string
		image Image
		node  *v1.Node
		want  bool
	}{
		{"multi-arch on arm64", ImageMultiArch, node("linux", "arm64", ""), true},
		{"multi-arch on windows", ImageMultiArch, node("windows", "amd64", "10.0.17763"), false},
		{"amd64-only on arm64", ImageAMD64Only, node("linux", "arm64", ""), false},
		{"windows on its build", ImageWindows, node("windows", "amd64", "10.0.17763"), true},
		{"windows on another build", ImageWindows, node("windows", "amd64", "10.0.20348"), false},
		{"windows on linux/amd64", ImageWindows, node("linux", "amd64", ""), false},
		{"riscv64 anywhere", ImageRISCV64Only, node("linux", "amd64", ""), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.image.RunsOn(tc.node); got != tc.want {
				t.Errorf("RunsOn = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPush checks the fixtures carry their platforms in the index and in each
// config, and that pushing twice gives the same digest (idempotent seeding).
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	r := Registry{PushHost: u.Host}
	ctx := context.Background()
	for _, im := range AllImages {
		t.Run(im.Name, func(t *testing.T) {
			d1, err := Push(ctx, r, im)
			if err != nil {
				t.Fatal(err)
			}
			d2, err := Push(ctx, r, im)
			if err != nil {
				t.Fatal(err)
			}
			if d1 != d2 {
				t.Errorf("second push digest %s, first %s", d2, d1)
			}
			ref, _ := name.ParseReference(im.Ref(r, r), name.Insecure)
			desc, err := remote.Get(ref)
			if err != nil {
				t.Fatal(err)
			}
			var got []ggcrv1.Platform
			if desc.MediaType.IsIndex() != im.Index {
				t.Fatalf("media type %s, index %v", desc.MediaType, im.Index)
			}
			if im.Index {
				idx, _ := desc.ImageIndex()
				m, err := idx.IndexManifest()
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range m.Manifests {
					img, err := idx.Image(d.Digest)
					if err != nil {
						t.Fatal(err)
					}
					cf, _ := img.ConfigFile()
					if d.Platform == nil || cf.OS != d.Platform.OS || cf.Architecture != d.Platform.Architecture {
						t.Errorf("descriptor platform %v, config %s/%s", d.Platform, cf.OS, cf.Architecture)
					}
					got = append(got, *d.Platform)
				}
			} else {
				img, _ := desc.Image()
				cf, err := img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, *cf.Platform())
			}
			if diff := cmp.Diff(im.Platforms, got); diff != "" {
				t.Errorf("platforms (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSchedulerConfig(t *testing.T) {
	dir := filepath.Join(RepoRoot(), "manifests", "scheduler-config")
	cfg, err := LoadSchedulerConfig(filepath.Join(dir, "secondary-scheduler.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.SetKubeconfig("/k").SetSchedulerName("s").SetLeaderElection(true, "ns", "lease", 0, 0, 0).
		AddInsecureRegistries("127.0.0.1:5001").AddInsecureRegistries("127.0.0.1:5001", "127.0.0.1:5002")
	out := filepath.Join(t.TempDir(), "c.yaml")
	if err := cfg.Write(out); err != nil {
		t.Fatal(err)
	}
	got, err := LoadSchedulerConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := got.SchedulerName(); n != "s" {
		t.Errorf("SchedulerName = %q", n)
	}
	if ns, name := got.Lease(); ns != "ns" || name != "lease" {
		t.Errorf("Lease = %s/%s", ns, name)
	}
	if k := got.child("clientConnection")["kubeconfig"]; k != "/k" {
		t.Errorf("kubeconfig = %v", k)
	}
	args := got.obj["profiles"].([]any)[0].(map[string]any)["pluginConfig"].([]any)[0].(map[string]any)["args"].(map[string]any)
	want := []any{
		map[string]any{"host": "127.0.0.1:5001", "insecure": true},
		map[string]any{"host": "127.0.0.1:5002", "insecure": true},
	}
	if diff := cmp.Diff(want, args["registries"]); diff != "" {
		t.Errorf("registries (-want,+got):\n%s", diff)
	}
	if args["failurePolicy"] != "Ignore" {
		t.Errorf("the manifests' args were not kept: %v", args)
	}
}

func TestShortNote(t *testing.T) {
	for note, want := range map[string]string{
		"ImagePlatformsResolved: Images of the pod run on linux/arm64":                                                                                "linux/arm64",
		`ImagePlatformsResolved: Images of the pod run on linux/arm64; on the cluster's other nodes: container "c" (x:1) does not run on linux/amd64`: "linux/arm64",
		"ArchFilterFailOpen: Scheduling without an architecture constraint":                                                                           "ArchFilterFailOpen",
		"archfilter.io/platforms=linux/amd64":                                                                                                         "archfilter.io/platforms=linux/amd64",
	} {
		if got := shortNote(note); got != want {
			t.Errorf("shortNote(%q) = %q, want %q", note, got, want)
		}
	}
}

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	afconfig "github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/apis/config/argsfile"
	afvalidation "github.com/archfilter/archfilter/apis/config/validation"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
	"github.com/archfilter/archfilter/test/manifests"
)

// TestManifestsDecode decodes every YAML document under manifests/ the way its
// consumer would, so an example can never drift from the code.
func TestManifestsDecode(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../../manifests", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no YAML found under manifests/")
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := manifests.Documents(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) == 0 {
				t.Fatal("no YAML document")
			}
			for i, doc := range docs {
				meta, err := manifests.Kind(doc)
				if err != nil {
					t.Fatalf("document %d: %v", i+1, err)
				}
				switch meta.Kind {
				case "KubeSchedulerConfiguration":
					if len(docs) != 1 {
						t.Fatal("keep a KubeSchedulerConfiguration alone in its file: --config is one document")
					}
					checkSchedulerConfig(t, file)
				case "Component":
					// A kustomize Component (manifests/components), strictly;
					// the e2e tests render the overlays with them.
					if filepath.Base(file) != "kustomization.yaml" {
						t.Fatalf("a Component must be named kustomization.yaml")
					}
					if _, err := manifests.ReadComponent(filepath.Dir(file)); err != nil {
						t.Fatal(err)
					}
				case "ArchFilterArgs":
					// A companion's --args file, read as the companion reads it.
					if _, err := argsfile.Load("--args", file, nil); err != nil {
						t.Fatal(err)
					}
				case "Kustomization":
					// Strictly, into the fields the manifests use (see
					// manifests.Kustomization); kustomize itself renders every
					// overlay in the e2e tests.
					if filepath.Base(file) != "kustomization.yaml" {
						t.Fatalf("a Kustomization must be named kustomization.yaml")
					}
					if _, err := manifests.ReadKustomization(filepath.Dir(file)); err != nil {
						t.Fatal(err)
					}
				case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
					"Deployment", "Service", "ConfigMap", "Pod":
					// client-go's scheme, rejecting unknown and duplicate fields.
					if _, err := manifests.Decode(doc); err != nil {
						t.Fatalf("document %d (%s): %v", i+1, meta.Kind, err)
					}
				case "CustomResourceDefinition":
					// Generated (make generate; make verify checks it is
					// current); the API server validates it in the
					// integration tests (TestPolicyValidation) and e2e.
					if !strings.HasPrefix(filepath.ToSlash(file), "../../manifests/crd/") {
						t.Fatalf("a CustomResourceDefinition belongs in manifests/crd, generated")
					}
				case "PrometheusRule", "ServiceMonitor":
					// manifests/monitoring, strictly (the Prometheus Operator's types).
					if err := manifests.DecodeMonitoring(doc); err != nil {
						t.Fatalf("document %d: %v", i+1, err)
					}
				default:
					t.Fatalf("kind %q (document %d) has no decoding check: add one here", meta.Kind, i+1)
				}
			}
		})
	}
}

// checkSchedulerConfig runs what kube-scheduler runs on --config: strict
// decoding with defaults, the scheduler's own validation, then ArchFilter's.
func checkSchedulerConfig(t *testing.T, file string) *config.KubeSchedulerConfiguration {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	cfg, err := options.LoadConfigFromFile(logger, file)
	if err != nil {
		t.Fatal(err)
	}
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatal(err)
	}
	for _, prof := range cfg.Profiles {
		for _, pc := range prof.PluginConfig {
			if pc.Name != archfilter.Name {
				continue
			}
			args, ok := pc.Args.(*afconfig.ArchFilterArgs)
			if !ok {
				t.Fatalf("profile %s: ArchFilter args decoded as %T", prof.SchedulerName, pc.Args)
			}
			if err := afvalidation.ValidateArchFilterArgs(field.NewPath("args"), args); err != nil {
				t.Errorf("profile %s: %v", prof.SchedulerName, err)
			}
		}
	}
	return cfg
}

// TestAllArgsManifest checks every field of the reference example arrives.
func TestAllArgsManifest(t *testing.T) {
	cfg := checkSchedulerConfig(t, filepath.Join(manifestDir, "all-args.yaml"))
	var got *afconfig.ArchFilterArgs
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name == archfilter.Name {
			got = pc.Args.(*afconfig.ArchFilterArgs)
		}
	}
	want := &afconfig.ArchFilterArgs{
		FailurePolicy:     afconfig.FailurePolicyFail,
		FallbackPlatforms: []string{"linux/amd64"},
		MaxWait:           metav1.Duration{Duration: 45 * time.Second},
		ResolveTimeout:    metav1.Duration{Duration: 5 * time.Second},
		Workers:           8,
		Cache: afconfig.CacheArgs{
			MaxEntries:           5000,
			TagTTL:               metav1.Duration{Duration: 2 * time.Minute},
			DigestTTL:            metav1.Duration{Duration: 12 * time.Hour},
			NegativeTTL:          metav1.Duration{Duration: 10 * time.Second},
			StaleWhileRevalidate: metav1.Duration{Duration: 15 * time.Minute},
		},
		Registries: []afconfig.RegistryConfig{
			{Host: "registry.example.com:5000", CAFile: "/etc/archfilter/certs/registry-ca.pem", Mirrors: []string{"mirror.local:5000"}},
			{Host: "mirror.local:5000", Insecure: true},
		},
		AllowedRegistries:        []string{"*.example.com", "registry.example.com:5000", "mirror.local:5000", "docker.io"},
		DeniedRegistries:         []string{"169.254.169.254"},
		GlobalPullSecret:         &afconfig.SecretReference{Namespace: "kube-system", Name: "archfilter-pull-secret"},
		DockerConfigFile:         "/etc/archfilter/docker/config.json",
		CredentialProviderConfig: "/etc/archfilter/credential-providers.yaml",
		CredentialProviderBinDir: "/usr/libexec/archfilter/credential-providers",
		SecretNamespaces:         []string{"kube-system", "team-a"},
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "archfilter.io/enabled", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"false"}},
		}},
		ExcludedNamespaces: []string{"kube-system"},
		PreferredPlatforms: []afconfig.PlatformPreference{
			{Platform: "linux/arm64", Weight: 100},
			{Platform: "linux/amd64", Weight: 10},
		},
		DaemonSetPolicy:     afconfig.DaemonSetPolicyEnforce,
		ArchTaintToleration: true,
		Run32BitImagesOn:    []string{"arm64"},
		Policies: afconfig.PolicyArgs{Enabled: true, AllowedOverrides: []afconfig.PolicyField{
			afconfig.PolicyFieldPreferredPlatforms, afconfig.PolicyFieldAllowedPlatforms, afconfig.PolicyFieldOptOut,
		}},
	}
	got.TypeMeta = metav1.TypeMeta{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("all-args.yaml (-want,+got):\n%s", diff)
	}
}

package scheme

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/archfilter/archfilter/apis/config"
)

// decode goes through the same file loader kube-scheduler uses for --config.
func decode(t *testing.T, yaml string) (*schedconfig.KubeSchedulerConfiguration, error) {
	t.Helper()
	path := t.TempDir() + "/config.yaml"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	logger, _ := ktesting.NewTestContext(t)
	return options.LoadConfigFromFile(logger, path)
}

func archFilterArgs(t *testing.T, cfg *schedconfig.KubeSchedulerConfiguration) *config.ArchFilterArgs {
	t.Helper()
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name == "ArchFilter" {
			args, ok := pc.Args.(*config.ArchFilterArgs)
			if !ok {
				t.Fatalf("ArchFilter args decoded as %T, want *config.ArchFilterArgs", pc.Args)
			}
			return args
		}
	}
	t.Fatal("no ArchFilter pluginConfig after decoding")
	return nil
}

const header = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: archfilter-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: ArchFilter
`

func defaultArgs() *config.ArchFilterArgs {
	return &config.ArchFilterArgs{
		FailurePolicy:  config.FailurePolicyIgnore,
		MaxWait:        metav1.Duration{Duration: 30 * time.Second},
		ResolveTimeout: metav1.Duration{Duration: 10 * time.Second},
		Workers:        16,
		Cache: config.CacheArgs{
			MaxEntries:           100000,
			TagTTL:               metav1.Duration{Duration: 5 * time.Minute},
			DigestTTL:            metav1.Duration{Duration: 24 * time.Hour},
			NegativeTTL:          metav1.Duration{Duration: 30 * time.Second},
			StaleWhileRevalidate: metav1.Duration{Duration: time.Hour},
		},
		ExcludedNamespaces: []string{"kube-system", "kube-public", "kube-node-lease"},
		DaemonSetPolicy:    config.DaemonSetPolicySkip,
		Policies:           config.PolicyArgs{Enabled: true, AllowedOverrides: config.PolicyFields},
	}
}

func TestDecodeDefaults(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want *config.ArchFilterArgs
	}{
		{
			name: "no pluginConfig entry gets every default",
			yaml: header,
			want: defaultArgs(),
		},
		{
			name: "empty args get every default",
			yaml: header + "  pluginConfig:\n  - name: ArchFilter\n    args: {}\n",
			want: defaultArgs(),
		},
		{
			name: "explicit empty excludedNamespaces excludes nothing",
			yaml: header + "  pluginConfig:\n  - name: ArchFilter\n    args:\n      excludedNamespaces: []\n",
			want: func() *config.ArchFilterArgs {
				a := defaultArgs()
				a.ExcludedNamespaces = []string{}
				return a
			}(),
		},
		{
			name: "partial cache keeps the other cache defaults",
			yaml: header + "  pluginConfig:\n  - name: ArchFilter\n    args:\n      cache: {tagTTL: 1m}\n",
			want: func() *config.ArchFilterArgs {
				a := defaultArgs()
				a.Cache.TagTTL = metav1.Duration{Duration: time.Minute}
				return a
			}(),
		},
		{
			name: "policies off, and an explicit empty allowedOverrides allows none",
			yaml: header + "  pluginConfig:\n  - name: ArchFilter\n    args:\n      policies: {enabled: false, allowedOverrides: []}\n",
			want: func() *config.ArchFilterArgs {
				a := defaultArgs()
				a.Policies = config.PolicyArgs{Enabled: false, AllowedOverrides: []config.PolicyField{}}
				return a
			}(),
		},
		{
			name: "limited overrides keep policies on",
			yaml: header + "  pluginConfig:\n  - name: ArchFilter\n    args:\n      policies: {allowedOverrides: [preferredPlatforms, optOut]}\n",
			want: func() *config.ArchFilterArgs {
				a := defaultArgs()
				a.Policies.AllowedOverrides = []config.PolicyField{config.PolicyFieldPreferredPlatforms, config.PolicyFieldOptOut}
				return a
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := decode(t, tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			got := archFilterArgs(t, cfg)
			got.TypeMeta = metav1.TypeMeta{}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("args (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		wantErr []string
	}{
		{
			name:    "unknown field is a strict decoding error naming it",
			args:    "      failurPolicy: Fail\n",
			wantErr: []string{"strict decoding error", `unknown field "failurPolicy"`, "ArchFilter"},
		},
		{
			name:    "unknown nested field",
			args:    "      cache: {maxEntry: 10}\n",
			wantErr: []string{"strict decoding error", `unknown field "cache.maxEntry"`},
		},
		{
			name:    "wrong type",
			args:    "      workers: many\n",
			wantErr: []string{"ArchFilter", "workers"},
		},
		{
			name:    "bad duration",
			args:    "      maxWait: soon\n",
			wantErr: []string{"ArchFilter", "soon"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(t, header+"  pluginConfig:\n  - name: ArchFilter\n    args:\n"+tc.args)
			if err == nil {
				t.Fatal("decoding succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

package validation

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/archfilter/archfilter/apis/config"
)

func validArgs() *config.ArchFilterArgs {
	return &config.ArchFilterArgs{
		FailurePolicy:  config.FailurePolicyIgnore,
		MaxWait:        metav1.Duration{Duration: 30 * time.Second},
		ResolveTimeout: metav1.Duration{Duration: 10 * time.Second},
		Workers:        16,
		Cache: config.CacheArgs{
			MaxEntries:  100,
			TagTTL:      metav1.Duration{Duration: time.Minute},
			DigestTTL:   metav1.Duration{Duration: time.Hour},
			NegativeTTL: metav1.Duration{Duration: time.Second},
		},
		ExcludedNamespaces: []string{"kube-system"},
		DaemonSetPolicy:    config.DaemonSetPolicySkip,
	}
}

// fieldError is what a user needs from an error: what kind, and where.
type fieldError struct {
	Type  field.ErrorType
	Field string
}

func fieldErrors(t *testing.T, err error) []fieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		t.Fatalf("error %v is %T, want an aggregate of field errors", err, err)
	}
	var out []fieldError
	for _, e := range agg.Errors() {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Fatalf("error %v is %T, want *field.Error", e, e)
		}
		out = append(out, fieldError{fe.Type, fe.Field})
	}
	return out
}

func TestValidateArchFilterArgs(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*config.ArchFilterArgs)
		want   []fieldError
	}{
		{name: "valid defaults", mutate: func(*config.ArchFilterArgs) {}},
		{
			name: "every optional field valid",
			mutate: func(a *config.ArchFilterArgs) {
				a.FailurePolicy = config.FailurePolicyFail
				a.FallbackPlatforms = []string{"linux/amd64", "linux/arm/v7", "linux/riscv64"}
				a.Run32BitImagesOn = []string{"amd64", "arm64"}
				a.Registries = []config.RegistryConfig{
					{Host: "registry.example.com:5000", Mirrors: []string{"mirror.local:5000", "[::1]:5000"}},
					{Host: "10.0.0.1", Insecure: true},
					{Host: "[fd00::1]:443"},
				}
				a.AllowedRegistries = []string{"*.example.com", "docker.io"}
				a.DeniedRegistries = []string{"169.254.169.254"}
				a.GlobalPullSecret = &config.SecretReference{Namespace: "kube-system", Name: "pull.secret"}
				a.CredentialProviderConfig = "/etc/cp.yaml"
				a.CredentialProviderBinDir = "/usr/libexec/cp"
				a.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
				a.PreferredPlatforms = []config.PlatformPreference{{Platform: "linux/arm64", Weight: 100}, {Platform: "linux/amd64", Weight: 1}}
				a.DaemonSetPolicy = config.DaemonSetPolicyEnforce
			},
		},
		{
			name: "policies.allowedOverrides: an unknown field and a duplicate",
			mutate: func(a *config.ArchFilterArgs) {
				a.Policies.AllowedOverrides = []config.PolicyField{"failurePolicy", "nodeSelector", "failurePolicy"}
			},
			want: []fieldError{
				{field.ErrorTypeNotSupported, "args.policies.allowedOverrides[1]"},
				{field.ErrorTypeDuplicate, "args.policies.allowedOverrides[2]"},
			},
		},
		{
			name:   "unknown failurePolicy",
			mutate: func(a *config.ArchFilterArgs) { a.FailurePolicy = "Retry" },
			want:   []fieldError{{field.ErrorTypeNotSupported, "args.failurePolicy"}},
		},
		{
			name:   "fallback platform without arch, and a duplicate after normalisation",
			mutate: func(a *config.ArchFilterArgs) { a.FallbackPlatforms = []string{"linux", "linux/amd64", "linux/x86_64"} },
			want: []fieldError{
				{field.ErrorTypeInvalid, "args.fallbackPlatforms[0]"},
				{field.ErrorTypeDuplicate, "args.fallbackPlatforms[2]"},
			},
		},
		{
			name:   "run32BitImagesOn: unknown architecture and a duplicate",
			mutate: func(a *config.ArchFilterArgs) { a.Run32BitImagesOn = []string{"arm64", "riscv64", "arm64"} },
			want: []fieldError{
				{field.ErrorTypeNotSupported, "args.run32BitImagesOn[1]"},
				{field.ErrorTypeDuplicate, "args.run32BitImagesOn[2]"},
			},
		},
		{
			name:   "zero maxWait",
			mutate: func(a *config.ArchFilterArgs) { a.MaxWait.Duration = 0 },
			want:   []fieldError{{field.ErrorTypeInvalid, "args.maxWait"}},
		},
		{
			name:   "maxWait over an hour",
			mutate: func(a *config.ArchFilterArgs) { a.MaxWait.Duration = 2 * time.Hour },
			want:   []fieldError{{field.ErrorTypeInvalid, "args.maxWait"}},
		},
		{
			name:   "negative resolveTimeout",
			mutate: func(a *config.ArchFilterArgs) { a.ResolveTimeout.Duration = -time.Second },
			want:   []fieldError{{field.ErrorTypeInvalid, "args.resolveTimeout"}},
		},
		{
			name:   "zero workers",
			mutate: func(a *config.ArchFilterArgs) { a.Workers = 0 },
			want:   []fieldError{{field.ErrorTypeInvalid, "args.workers"}},
		},
		{
			name:   "too many workers",
			mutate: func(a *config.ArchFilterArgs) { a.Workers = MaxWorkers + 1 },
			want:   []fieldError{{field.ErrorTypeInvalid, "args.workers"}},
		},
		{
			name: "bad cache",
			mutate: func(a *config.ArchFilterArgs) {
				a.Cache = config.CacheArgs{MaxEntries: 0, TagTTL: metav1.Duration{}, DigestTTL: metav1.Duration{Duration: -1}, NegativeTTL: metav1.Duration{},
					StaleWhileRevalidate: metav1.Duration{Duration: -time.Second}}
			},
			want: []fieldError{
				{field.ErrorTypeInvalid, "args.cache.maxEntries"},
				{field.ErrorTypeInvalid, "args.cache.tagTTL"},
				{field.ErrorTypeInvalid, "args.cache.digestTTL"},
				{field.ErrorTypeInvalid, "args.cache.negativeTTL"},
				{field.ErrorTypeInvalid, "args.cache.staleWhileRevalidate"},
			},
		},
		{
			name:   "staleWhileRevalidate 0 turns it off",
			mutate: func(a *config.ArchFilterArgs) { a.Cache.StaleWhileRevalidate = metav1.Duration{} },
		},
		{
			name: "bad registries",
			mutate: func(a *config.ArchFilterArgs) {
				a.Registries = []config.RegistryConfig{
					{Host: ""},
					{Host: "https://registry.example.com"},
					{Host: "registry.example.com:99999"},
					{Host: "::1"},
					{Host: "Registry_With_Underscore"},
					{Host: "ok.example.com", Mirrors: []string{"ok.example.com", "bad/mirror"}},
					{Host: "ok.example.com"},
				}
			},
			want: []fieldError{
				{field.ErrorTypeInvalid, "args.registries[0].host"},
				{field.ErrorTypeInvalid, "args.registries[1].host"},
				{field.ErrorTypeInvalid, "args.registries[2].host"},
				{field.ErrorTypeInvalid, "args.registries[3].host"},
				{field.ErrorTypeInvalid, "args.registries[4].host"},
				{field.ErrorTypeInvalid, "args.registries[5].mirrors[0]"},
				{field.ErrorTypeInvalid, "args.registries[5].mirrors[1]"},
				{field.ErrorTypeDuplicate, "args.registries[6].host"},
			},
		},
		{
			name: "bad registry globs",
			mutate: func(a *config.ArchFilterArgs) {
				a.AllowedRegistries = []string{"", "[a-"}
				a.DeniedRegistries = []string{"https://x"}
			},
			want: []fieldError{
				{field.ErrorTypeInvalid, "args.allowedRegistries[0]"},
				{field.ErrorTypeInvalid, "args.allowedRegistries[1]"},
				{field.ErrorTypeInvalid, "args.deniedRegistries[0]"},
			},
		},
		{
			name: "bad globalPullSecret",
			mutate: func(a *config.ArchFilterArgs) {
				a.GlobalPullSecret = &config.SecretReference{Namespace: "Kube_System", Name: ""}
			},
			want: []fieldError{
				{field.ErrorTypeInvalid, "args.globalPullSecret.namespace"},
				{field.ErrorTypeInvalid, "args.globalPullSecret.name"},
			},
		},
		{
			name: "bad secretNamespaces",
			mutate: func(a *config.ArchFilterArgs) {
				a.SecretNamespaces = []string{"team-a", "Team_B", "team-a"}
				a.GlobalPullSecret = &config.SecretReference{Namespace: "kube-system", Name: "pull"}
			},
			want: []fieldError{
				{field.ErrorTypeInvalid, "args.secretNamespaces[1]"},
				{field.ErrorTypeDuplicate, "args.secretNamespaces[2]"},
				{field.ErrorTypeInvalid, "args.globalPullSecret.namespace"},
			},
		},
		{
			name: "global pull secret in a secretNamespace",
			mutate: func(a *config.ArchFilterArgs) {
				a.SecretNamespaces = []string{"team-a", "kube-system"}
				a.GlobalPullSecret = &config.SecretReference{Namespace: "kube-system", Name: "pull"}
			},
		},
		{
			name:   "credential provider config without bin dir",
			mutate: func(a *config.ArchFilterArgs) { a.CredentialProviderConfig = "/etc/cp.yaml" },
			want:   []fieldError{{field.ErrorTypeRequired, "args.credentialProviderBinDir"}},
		},
		{
			name: "bad namespaceSelector",
			mutate: func(a *config.ArchFilterArgs) {
				a.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}}
			},
			want: []fieldError{{field.ErrorTypeInvalid, "args.namespaceSelector.matchExpressions[0].operator"}},
		},
		{
			name:   "bad excluded namespace",
			mutate: func(a *config.ArchFilterArgs) { a.ExcludedNamespaces = []string{"kube-system", "Not A Namespace"} },
			want:   []fieldError{{field.ErrorTypeInvalid, "args.excludedNamespaces[1]"}},
		},
		{
			name: "bad preferred platforms",
			mutate: func(a *config.ArchFilterArgs) {
				a.PreferredPlatforms = []config.PlatformPreference{
					{Platform: "arm64", Weight: 10},
					{Platform: "linux/arm64", Weight: 0},
					{Platform: "linux/aarch64", Weight: 101},
				}
			},
			want: []fieldError{
				{field.ErrorTypeInvalid, "args.preferredPlatforms[0].platform"},
				{field.ErrorTypeInvalid, "args.preferredPlatforms[1].weight"},
				{field.ErrorTypeDuplicate, "args.preferredPlatforms[2].platform"},
				{field.ErrorTypeInvalid, "args.preferredPlatforms[2].weight"},
			},
		},
		{
			name:   "unknown daemonSetPolicy",
			mutate: func(a *config.ArchFilterArgs) { a.DaemonSetPolicy = "Sometimes" },
			want:   []fieldError{{field.ErrorTypeNotSupported, "args.daemonSetPolicy"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := validArgs()
			tc.mutate(args)
			got := fieldErrors(t, ValidateArchFilterArgs(field.NewPath("args"), args))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("field errors (-want,+got):\n%s", diff)
			}
		})
	}
}

package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ArchFilterArgs configures the ArchFilter plugin. See the v1 type for the
// meaning of each field; this internal version has every default applied.
type ArchFilterArgs struct {
	metav1.TypeMeta

	FailurePolicy            FailurePolicy
	FallbackPlatforms        []string
	MaxWait                  metav1.Duration
	ResolveTimeout           metav1.Duration
	Workers                  int32
	Cache                    CacheArgs
	Registries               []RegistryConfig
	AllowedRegistries        []string
	DeniedRegistries         []string
	GlobalPullSecret         *SecretReference
	DockerConfigFile         string
	CredentialProviderConfig string
	CredentialProviderBinDir string
	SecretNamespaces         []string
	NamespaceSelector        *metav1.LabelSelector
	ExcludedNamespaces       []string
	PreferredPlatforms       []PlatformPreference
	DaemonSetPolicy          DaemonSetPolicy
	ArchTaintToleration      bool
	Run32BitImagesOn         []string
	Policies                 PolicyArgs
}

// PolicyArgs says whether ArchFilterPolicy objects are honoured and which of
// their fields may override the cluster's settings.
type PolicyArgs struct {
	Enabled bool
	// AllowedOverrides are PolicyField values; defaulted to all of them.
	AllowedOverrides []PolicyField
}

// PolicyField names a field of an ArchFilterPolicy's spec that can override a
// cluster setting.
type PolicyField string

const (
	// PolicyFieldPreferredPlatforms: spec.preferredPlatforms.
	PolicyFieldPreferredPlatforms PolicyField = "preferredPlatforms"
	// PolicyFieldAllowedPlatforms: spec.allowedPlatforms.
	PolicyFieldAllowedPlatforms PolicyField = "allowedPlatforms"
	// PolicyFieldFailurePolicy: spec.failurePolicy.
	PolicyFieldFailurePolicy PolicyField = "failurePolicy"
	// PolicyFieldOptOut: spec.optOut.
	PolicyFieldOptOut PolicyField = "optOut"
)

// PolicyFields are every PolicyField, in the order documentation lists them.
var PolicyFields = []PolicyField{PolicyFieldPreferredPlatforms, PolicyFieldAllowedPlatforms, PolicyFieldFailurePolicy, PolicyFieldOptOut}

// FailurePolicy says what happens to a pod whose image platforms cannot be resolved.
type FailurePolicy string

const (
	// FailurePolicyIgnore releases the pod without an architecture constraint
	// (or with FallbackPlatforms, when set).
	FailurePolicyIgnore FailurePolicy = "Ignore"
	// FailurePolicyFail keeps the pod unschedulable and retries resolution with backoff.
	FailurePolicyFail FailurePolicy = "Fail"
)

// DaemonSetPolicy says whether DaemonSet pods are filtered.
type DaemonSetPolicy string

const (
	// DaemonSetPolicySkip leaves DaemonSet pods alone: the DaemonSet controller pins
	// each pod to its node, so filtering could only leave it Pending.
	DaemonSetPolicySkip DaemonSetPolicy = "Skip"
	// DaemonSetPolicyEnforce filters DaemonSet pods like any other pod.
	DaemonSetPolicyEnforce DaemonSetPolicy = "Enforce"
)

// CacheArgs bounds the image platform cache.
type CacheArgs struct {
	MaxEntries  int32
	TagTTL      metav1.Duration
	DigestTTL   metav1.Duration
	NegativeTTL metav1.Duration
	// StaleWhileRevalidate: 0 serves no expired answer.
	StaleWhileRevalidate metav1.Duration
}

// RegistryConfig mirrors a node runtime's per-registry settings.
type RegistryConfig struct {
	Host     string
	Insecure bool
	CAFile   string
	Mirrors  []string
}

// SecretReference names a Secret.
type SecretReference struct {
	Namespace string
	Name      string
}

// PlatformPreference adds Weight to nodes of Platform when scoring.
type PlatformPreference struct {
	Platform string
	Weight   int32
}

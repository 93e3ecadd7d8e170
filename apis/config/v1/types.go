package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ArchFilterArgs configures the ArchFilter plugin. Every field is optional.
type ArchFilterArgs struct {
	metav1.TypeMeta `json:",inline"`

	// FailurePolicy says what happens to a pod whose image platforms cannot be
	// resolved (registry unreachable, image missing, no credentials): Ignore
	// releases it without an architecture constraint (or with FallbackPlatforms),
	// Fail keeps it unschedulable and retries with backoff. Default: Ignore.
	FailurePolicy *FailurePolicy `json:"failurePolicy,omitempty"`
	// FallbackPlatforms ("os/arch[/variant]") constrain a pod whose resolution
	// failed under FailurePolicy Ignore. Empty means no constraint.
	FallbackPlatforms []string `json:"fallbackPlatforms,omitempty"`
	// MaxWait is the longest a pod is held before scheduling while its images
	// resolve; then the failure policy applies. Default: 30s.
	MaxWait *metav1.Duration `json:"maxWait,omitempty"`
	// ResolveTimeout is the time budget for resolving one image, all registry
	// round trips included. Default: 10s.
	ResolveTimeout *metav1.Duration `json:"resolveTimeout,omitempty"`
	// Workers is the number of concurrent image resolutions. Default: 16.
	Workers *int32 `json:"workers,omitempty"`
	// Cache bounds the image platform cache.
	Cache CacheArgs `json:"cache,omitempty"`
	// Registries holds per-registry settings, like the nodes' container runtime
	// configuration. A mirror's own TLS settings come from its own entry.
	Registries []RegistryConfig `json:"registries,omitempty"`
	// AllowedRegistries are registry host globs ("*.example.com", "ghcr.io") the
	// resolver may contact; empty means any. A pod whose image is on a registry not
	// allowed is treated as a resolution failure.
	AllowedRegistries []string `json:"allowedRegistries,omitempty"`
	// DeniedRegistries are registry host globs the resolver never contacts; a deny
	// wins over an allow.
	DeniedRegistries []string `json:"deniedRegistries,omitempty"`
	// GlobalPullSecret is a dockerconfigjson Secret whose credentials are tried for
	// every pod, like a pull secret baked into the nodes' runtime.
	GlobalPullSecret *SecretReference `json:"globalPullSecret,omitempty"`
	// DockerConfigFile is a docker config.json mounted into the scheduler.
	DockerConfigFile string `json:"dockerConfigFile,omitempty"`
	// CredentialProviderConfig is a kubelet CredentialProviderConfig file; its
	// plugins are executed from CredentialProviderBinDir. Set both or neither.
	CredentialProviderConfig string `json:"credentialProviderConfig,omitempty"`
	// CredentialProviderBinDir is the directory of credential provider plugins.
	CredentialProviderBinDir string `json:"credentialProviderBinDir,omitempty"`
	// SecretNamespaces, when set, are the only namespaces whose pull secrets are
	// read, for clusters that forbid reading secrets cluster-wide: the scheduler
	// then needs list and watch on secrets in these namespaces only. A pod in
	// another namespace is resolved with the global pull secret (whose namespace
	// must be listed), the docker config file and the credential providers, or
	// anonymously. Unset reads pull secrets in every namespace.
	SecretNamespaces []string `json:"secretNamespaces,omitempty"`
	// NamespaceSelector limits ArchFilter to pods in matching namespaces. Unset or
	// empty selects every namespace.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// ExcludedNamespaces are never filtered. Unset means kube-system, kube-public
	// and kube-node-lease; an explicit empty list excludes nothing. Not
	// omitempty: the empty list must survive encoding (kube-scheduler's
	// --write-config-to, its logged configuration), or it would read back as
	// unset, the defaults.
	ExcludedNamespaces []string `json:"excludedNamespaces"`
	// PreferredPlatforms add a score to nodes of a platform, e.g. to prefer
	// cheaper arm64 nodes for images that run anywhere.
	PreferredPlatforms []PlatformPreference `json:"preferredPlatforms,omitempty"`
	// DaemonSetPolicy is Skip (default: DaemonSet pods are pinned to their node by
	// the controller; filtering them only leaves them Pending) or Enforce.
	DaemonSetPolicy *DaemonSetPolicy `json:"daemonSetPolicy,omitempty"`
	// ArchTaintToleration, when true, treats a kubernetes.io/arch=<arch>:NoSchedule
	// taint as tolerated by a pod whose images all support <arch>. It needs the
	// ArchFilter-wrapped TaintToleration plugin in the profile. Default: false.
	ArchTaintToleration *bool `json:"archTaintToleration,omitempty"`
	// Run32BitImagesOn lists the 64-bit node architectures that also run their
	// 32-bit counterpart's images, as containerd allows: "amd64" (linux/386
	// images; the kernel needs IA-32 emulation) and "arm64" (arm/v5 to arm/v8
	// images; the CPU needs AArch32, which several server CPUs lack). Set an
	// architecture only when every node of it can. Default: none.
	Run32BitImagesOn []string `json:"run32BitImagesOn,omitempty"`
	// Policies says whether namespaced ArchFilterPolicy objects (archfilter.io/v1alpha1)
	// are honoured, and which of their fields may override these settings.
	Policies PolicyArgs `json:"policies,omitempty"`
}

// PolicyArgs limits what teams' ArchFilterPolicy objects may change.
type PolicyArgs struct {
	// Enabled, when false, makes archfilter neither watch nor honour
	// ArchFilterPolicy objects (nor need the CRD). Default: true. When the
	// CRD is not installed, archfilter runs without policies and says so in
	// its log, and starts honouring them once it is.
	Enabled *bool `json:"enabled,omitempty"`
	// AllowedOverrides are the ArchFilterPolicy spec fields a policy may set:
	// preferredPlatforms, allowedPlatforms, failurePolicy, optOut. A policy
	// setting another field reports it in its Overstepping condition and that
	// field is ignored. Unset allows all four; an explicit empty list allows
	// none. Not omitempty, as ExcludedNamespaces: the empty list must survive
	// encoding.
	AllowedOverrides []string `json:"allowedOverrides"`
}

// FailurePolicy is Ignore or Fail.
type FailurePolicy string

const (
	// FailurePolicyIgnore releases an unresolvable pod without an architecture constraint.
	FailurePolicyIgnore FailurePolicy = "Ignore"
	// FailurePolicyFail keeps an unresolvable pod unschedulable.
	FailurePolicyFail FailurePolicy = "Fail"
)

// DaemonSetPolicy is Skip or Enforce.
type DaemonSetPolicy string

const (
	// DaemonSetPolicySkip leaves DaemonSet pods unfiltered.
	DaemonSetPolicySkip DaemonSetPolicy = "Skip"
	// DaemonSetPolicyEnforce filters DaemonSet pods.
	DaemonSetPolicyEnforce DaemonSetPolicy = "Enforce"
)

// CacheArgs bounds the image platform cache.
type CacheArgs struct {
	// MaxEntries caps the number of cached answers. Default: 100000.
	MaxEntries *int32 `json:"maxEntries,omitempty"`
	// TagTTL is how long a tag→digest answer is trusted before it is revalidated
	// with a HEAD request (tags move). Default: 5m.
	TagTTL *metav1.Duration `json:"tagTTL,omitempty"`
	// DigestTTL is how long digest→platforms answers live (digests are immutable;
	// this only bounds memory). Default: 24h.
	DigestTTL *metav1.Duration `json:"digestTTL,omitempty"`
	// NegativeTTL is how long a failed resolution is remembered. Default: 30s.
	NegativeTTL *metav1.Duration `json:"negativeTTL,omitempty"`
	// StaleWhileRevalidate is how long after a tag or digest answer expires it
	// is still used, while one HEAD request in the background refreshes it, so
	// pods are not held for the refresh. Failures are never served stale.
	// "0s" turns it off. Default: 1h.
	StaleWhileRevalidate *metav1.Duration `json:"staleWhileRevalidate,omitempty"`
}

// RegistryConfig holds the settings for one registry host.
type RegistryConfig struct {
	// Host is the registry as it appears in image references, with its port if
	// any: "registry.example.com:5000", "docker.io".
	Host string `json:"host"`
	// Insecure allows plain HTTP and unverified TLS for this host only.
	Insecure bool `json:"insecure,omitempty"`
	// CAFile is a PEM bundle trusted for this host, in addition to the system roots.
	CAFile string `json:"caFile,omitempty"`
	// Mirrors are hosts tried in order before Host, like containerd's hosts.toml.
	Mirrors []string `json:"mirrors,omitempty"`
}

// SecretReference names a Secret.
type SecretReference struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// PlatformPreference adds Weight (1-100) to the score of nodes of Platform.
type PlatformPreference struct {
	// Platform is "os/arch[/variant]", e.g. "linux/arm64".
	Platform string `json:"platform"`
	// Weight is 1-100.
	Weight int32 `json:"weight"`
}

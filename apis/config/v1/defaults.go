package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/apis/config"
)

// Defaults, exported so documentation and tests quote one source.
const (
	DefaultMaxWait          = 30 * time.Second
	DefaultResolveTimeout   = 10 * time.Second
	DefaultWorkers          = 16
	DefaultCacheMaxEntries  = 100000
	DefaultCacheTagTTL      = 5 * time.Minute
	DefaultCacheDigestTTL   = 24 * time.Hour
	DefaultCacheNegativeTTL = 30 * time.Second
	// DefaultCacheStaleWhileRevalidate matches the resolver's default.
	DefaultCacheStaleWhileRevalidate = time.Hour
)

// DefaultExcludedNamespaces hold the cluster's own components, whose images are
// chosen by the cluster operator and must never wait on a registry.
var DefaultExcludedNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// SetDefaults_ArchFilterArgs fills every unset field.
func SetDefaults_ArchFilterArgs(obj *ArchFilterArgs) {
	if obj.FailurePolicy == nil {
		obj.FailurePolicy = ptr.To(FailurePolicyIgnore)
	}
	setDuration(&obj.MaxWait, DefaultMaxWait)
	setDuration(&obj.ResolveTimeout, DefaultResolveTimeout)
	if obj.Workers == nil {
		obj.Workers = ptr.To[int32](DefaultWorkers)
	}
	if obj.Cache.MaxEntries == nil {
		obj.Cache.MaxEntries = ptr.To[int32](DefaultCacheMaxEntries)
	}
	setDuration(&obj.Cache.TagTTL, DefaultCacheTagTTL)
	setDuration(&obj.Cache.DigestTTL, DefaultCacheDigestTTL)
	setDuration(&obj.Cache.NegativeTTL, DefaultCacheNegativeTTL)
	setDuration(&obj.Cache.StaleWhileRevalidate, DefaultCacheStaleWhileRevalidate)
	// nil means "not written": an explicit [] is the user's way to exclude nothing.
	if obj.ExcludedNamespaces == nil {
		obj.ExcludedNamespaces = append([]string(nil), DefaultExcludedNamespaces...)
	}
	if obj.DaemonSetPolicy == nil {
		obj.DaemonSetPolicy = ptr.To(DaemonSetPolicySkip)
	}
	if obj.Policies.Enabled == nil {
		obj.Policies.Enabled = ptr.To(true)
	}
	if obj.Policies.AllowedOverrides == nil {
		for _, f := range config.PolicyFields {
			obj.Policies.AllowedOverrides = append(obj.Policies.AllowedOverrides, string(f))
		}
	}
	if obj.ArchTaintToleration == nil {
		obj.ArchTaintToleration = ptr.To(false)
	}
}

func setDuration(d **metav1.Duration, def time.Duration) {
	if *d == nil {
		*d = &metav1.Duration{Duration: def}
	}
}

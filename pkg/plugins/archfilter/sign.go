package archfilter

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
)

// Signature fragment keys. Fragments with one key must mean the same thing for
// every plugin that returns them, so ours are prefixed with the plugin name.
const (
	// SignerAllowedPlatforms: the platforms PreFilter would allow the pod,
	// with Windows builds, or "*" when ArchFilter leaves the pod alone.
	SignerAllowedPlatforms = Name + ".AllowedPlatforms()"
	// SignerPreferredPlatforms: the platforms PreScore would prefer for the
	// pod (its annotation's, its ArchFilterPolicy's or the profile's), as
	// "os/arch=weight,...", or "" when ArchFilter leaves the pod alone.
	SignerPreferredPlatforms = Name + ".PreferredPlatforms()"
)

var _ fwk.SignPlugin = &ArchFilter{}

// SignPod makes ArchFilter take part in opportunistic batching (KEP-5598,
// beta and on by default from 1.35). The scheduler turns batching off for
// every pod of a profile with a Filter or Score plugin that does not sign, so
// without this the whole profile would lose it.
//
// Two pods may share a cached result when ArchFilter's Filter and Score treat
// them alike, which depends on what the pods resolve to, not on their image
// names: the fragment is the decision itself (the allowed set, from memory,
// as in PreFilter). So pods of one Deployment batch, and a pod whose tag moved
// to an image of other platforms in between does not. A pod that ArchFilter
// would reject is not signed: it has no result to share.
func (pl *ArchFilter) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	allowed, preferred := []string{"*"}, ""
	if pl.scope.skipReason(pod) == "" {
		rules := pl.settingsFor(pod)
		d := rules.Decide(pod, pl.lookupFor(pod))
		if d.Rejection != nil {
			return nil, fwk.NewStatus(fwk.Unschedulable, d.Rejection.Message)
		}
		allowed = signedPlatforms(d.Platforms)
		prefs, _, _ := rules.Preferred(pod)
		preferred = decision.PreferencesString(prefs)
	}
	return []fwk.SignFragment{
		{Key: SignerAllowedPlatforms, Value: allowed},
		{Key: SignerPreferredPlatforms, Value: preferred},
	}, nil
}

// signedPlatforms lists set with the Windows build of each platform, which
// Set.String leaves out but node matching does not.
func signedPlatforms(set platform.Set) []string {
	if set.IsAny() {
		return []string{"*"}
	}
	ps := set.Platforms()
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String() + "@" + p.OSVersion
	}
	return out
}

package archfilter

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// EventDaemonSetMismatch warns that a DaemonSet pod left unfiltered
// (daemonSetPolicy Skip) is pinned to a node its images do not run on.
const EventDaemonSetMismatch = "DaemonSetPodPlatformMismatch"

// checkDaemonSetPod is PreEnqueue's work for a DaemonSet pod under Skip: the
// pod is admitted at once (the DaemonSet controller pinned it; filtering would
// only leave it Pending), and its images are resolved in the background so
// that a person is told when it is bound for a node that cannot run it.
func (pl *ArchFilter) checkDaemonSetPod(pod *v1.Pod) {
	node := pinnedNode(pod)
	if node == "" {
		return
	}
	// Once per pod: PreEnqueue runs again on every update of the pod.
	if _, checked := pl.daemonSetChecked.LoadOrStore(pod.UID, struct{}{}); checked {
		return
	}
	creds := pl.credentials.ForPod(pod)
	missing := decision.Unknown(pod, pl.lookupFor(pod))
	if len(missing) == 0 {
		pl.warnIfMismatch(pod, node)
		return
	}
	for _, image := range missing {
		// Each callback checks again; only the one that completes the set warns.
		pl.resolver.ResolveAsync(request(image, creds), func(resolver.Result) { pl.warnIfMismatch(pod, node) })
	}
}

// warnIfMismatch records an event when every image of pod is known and the
// pinned node's platform is not among those the rules would allow it. It only
// reads memory.
func (pl *ArchFilter) warnIfMismatch(pod *v1.Pod, nodeName string) {
	d := pl.settings.Decide(pod, pl.lookupFor(pod))
	if d.Rejection != nil || d.FailedOpen || d.Platforms.IsAny() {
		return
	}
	np, ok := pl.nodes.platform(nodeName)
	if !ok || d.Platforms.MatchesNode(np) {
		return
	}
	pl.events.record(pod, v1.EventTypeWarning, EventDaemonSetMismatch,
		"Pinned to node %s (%s) but its images run on %s; not filtered because daemonSetPolicy is Skip, so expect exec format errors or image pull failures there",
		nodeName, np, d.Platforms)
}

// namesNodes reports whether the pod's required node affinity lists node
// names (metadata.name), which the NodeAffinity plugin turns into its own
// PreFilterResult.
func namesNodes(pod *v1.Pod) bool {
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" {
				return true
			}
		}
	}
	return false
}

// pinnedNode is the node the DaemonSet controller bound the pod to, through
// a required node affinity term on metadata.name.
func pinnedNode(pod *v1.Pod) string {
	if metav1.GetControllerOfNoCopy(pod) == nil {
		return ""
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == v1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

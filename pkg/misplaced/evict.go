package misplaced

import (
	"cmp"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
)

// NotEvicted is why a pod with findings is not evicted: a short, stable word
// for metrics (archfilter_placement_misplaced_not_evicted_total{reason}).
type NotEvicted string

const (
	// NotEvictedNothingFound: the pod has no finding.
	NotEvictedNothingFound NotEvicted = "nothing-found"
	// NotEvictedOutOfScope: archfilter leaves the pod alone, so it would not
	// place the replacement either.
	NotEvictedOutOfScope NotEvicted = "out-of-scope"
	// NotEvictedDaemonSet: the replacement would be bound to the same node.
	NotEvictedDaemonSet NotEvicted = "daemonset"
	// NotEvictedNoController: nothing would recreate the pod.
	NotEvictedNoController NotEvicted = "no-controller"
	// NotEvictedImageLies: a container failed with exec format error on a
	// platform its image's manifest claims; the replacement would be placed by
	// the same manifest on the same platform, and fail again.
	NotEvictedImageLies NotEvicted = "image-lies"
	// NotEvictedRunningUnknown: the image the pod runs could not be read, so
	// nothing shows the node's platform is missing from it.
	NotEvictedRunningUnknown NotEvicted = "running-image-unknown"
	// NotEvictedNoNode: the images the replacement would start run on none of
	// the cluster's nodes (or are not known): it would stay Pending.
	NotEvictedNoNode NotEvicted = "no-node-for-replacement"
	// NotEvictedNoEvidence: only an exec format error, from an image whose
	// platforms are not known: nothing shows a replacement would run.
	NotEvictedNoEvidence NotEvicted = "no-platform-evidence"
	// NotEvictedNotPlaced: nothing of archfilter would place the replacement
	// now (the placement webhook is not serving yet, or, without the placement
	// mode, the pod names a scheduler without ArchFilter): the caller decides.
	NotEvictedNotPlaced NotEvicted = "replacement-not-placed"
)

// NotEvictedReasons lists every NotEvicted, for metrics.
var NotEvictedReasons = []NotEvicted{NotEvictedOutOfScope, NotEvictedDaemonSet, NotEvictedNoController, NotEvictedImageLies,
	NotEvictedRunningUnknown, NotEvictedNoNode, NotEvictedNoEvidence, NotEvictedNotPlaced}

// Evictable reports whether evicting the pod can help, and if not, why (reason
// "" when it can). Evicting helps only when the replacement is placed where it
// runs: the node's platform is missing from the image the pod runs (a
// NodeCannotRun finding judged by its running digest, or by its tag when it
// has not started), the images its controller would start (the pod's
// references now) run on a platform the cluster's nodes offer, archfilter
// places the replacement (the pod is in scope), and something recreates it
// elsewhere (a controller that is not a DaemonSet). An exec format error on a
// platform the manifest claims is never a reason to evict: the image lies.
func (r Report) Evictable(pod *v1.Pod) (reason NotEvicted, why string) {
	switch {
	case len(r.Findings) == 0:
		return NotEvictedNothingFound, "nothing found"
	case r.Skip != "":
		return NotEvictedOutOfScope, "not in archfilter's scope: " + string(r.Skip)
	case decision.IsDaemonSetPod(pod):
		return NotEvictedDaemonSet, "a DaemonSet pod: its replacement would be bound to the same node"
	case metav1.GetControllerOfNoCopy(pod) == nil:
		return NotEvictedNoController, "no controller would recreate it"
	}
	return r.replacement, r.replacementWhy
}

// replacement says whether a replacement of the pod would be placed where it
// runs, from its findings, its references' answers and the cluster's nodes.
func (j *judge) replacement(r *Report, clusterPlatforms func() []platform.NodePlatform) (NotEvicted, string) {
	var cannotRun, byTag bool
	for _, f := range r.Findings {
		switch {
		case f.Kind == ExecFormatError && f.Claimed:
			return NotEvictedImageLies, fmt.Sprintf("container %q fails with exec format error on %s, which its image %s claims: a replacement would be placed on the same platform and fail again (kubectl archfilter check --deep %s shows which binary is wrong)",
				f.Container, f.NodePlatform, cmp.Or(f.Running, f.Image), f.Image)
		case f.Kind == NodeCannotRun && f.ByTag:
			byTag = true
		case f.Kind == NodeCannotRun:
			cannotRun = true
		}
	}
	switch {
	case !cannotRun && byTag:
		return NotEvictedRunningUnknown, "the image it runs cannot be read, so nothing shows it lacks " + j.where + " (judged by the tag only)"
	case !cannotRun:
		return NotEvictedNoEvidence, "the platforms of the image it runs are not known, so nothing shows a replacement would be placed elsewhere"
	}
	set, ok := j.replacementPlatforms()
	if !ok {
		return NotEvictedNoNode, "the images a replacement would start did not all resolve, so nothing shows it would find a node"
	}
	if clusterPlatforms == nil {
		return NotEvictedNoNode, "the cluster's nodes are not known"
	}
	for _, np := range clusterPlatforms() {
		if set.MatchesNode(np) {
			return "", ""
		}
	}
	return NotEvictedNoNode, fmt.Sprintf("a replacement's images run on %s, which no node of the cluster offers: it would stay Pending", set)
}

// replacementPlatforms are where a replacement could run: the declared
// platforms, or every reference's (what the controller would start now), within
// the pod's own os/arch constraints; ok is false when a reference did not
// resolve.
func (j *judge) replacementPlatforms() (set platform.Set, ok bool) {
	if declared, isDeclared, err := j.s.DeclaredPlatforms(j.pod); isDeclared {
		return declared, err == nil
	}
	set, ok = platform.Any(), true
	podplatform.ForEachImage(j.pod, func(img podplatform.Image) bool {
		s, known, err := j.platformsOf(img.Reference)
		if !known || err != nil {
			ok = false
			return false
		}
		set = set.Intersect(s)
		return true
	})
	if !ok {
		return set, false
	}
	return podplatform.OwnConstraintOf(j.pod).Restrict(set), true
}

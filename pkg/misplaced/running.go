package misplaced

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/pkg/podplatform"
)

// The prefixes a container runtime may put before a status' imageID (dockershim
// and cri-dockerd write "docker-pullable://repo@digest").
var imageIDPrefixes = []string{"docker-pullable://", "docker://"}

// Running is the image one container runs, as its status' imageID says.
type Running struct {
	// Ref is the reference the container is judged by: the spec's repository at
	// the digest of its imageID ("registry.example.com/app@sha256:…"), or the
	// spec's own reference when it already names that digest. "" when the
	// status names no image (not started yet: the kubelet pulls the spec's
	// reference, so the tag's answer is the image that will run) or no digest
	// a registry serves (Problem says so).
	Ref string
	// From is the repository the imageID names when it is not the spec's (a
	// mirror the runtime pulled from); the digest is looked up in the spec's
	// repository, never in the mirror, whose address no pod author vouches for.
	From string
	// Problem says why the status' imageID cannot be judged ("" when it can, or
	// when there is none): then the container is judged by its tag, and never
	// evicted on that judgement.
	Problem string
}

// RunningImage reads which image a container of pod (img, from
// podplatform.ForEachImage) runs, from the pod's container statuses. Image
// volumes have no imageID in any status: they are judged by their reference.
func RunningImage(pod *v1.Pod, img podplatform.Image) Running {
	var statuses []v1.ContainerStatus
	switch img.Kind {
	case podplatform.KindInit, podplatform.KindSidecar:
		statuses = pod.Status.InitContainerStatuses
	case podplatform.KindContainer:
		statuses = pod.Status.ContainerStatuses
	default:
		return Running{}
	}
	for i := range statuses {
		if statuses[i].Name == img.Name {
			return runningOf(img.Reference, statuses[i].ImageID)
		}
	}
	return Running{}
}

// runningOf judges spec (the container's image reference) against imageID.
func runningOf(spec, imageID string) Running {
	id := imageID
	for _, p := range imageIDPrefixes {
		id = strings.TrimPrefix(id, p)
	}
	if id == "" {
		return Running{}
	}
	at := strings.LastIndexByte(id, '@')
	if at < 0 {
		// "sha256:<config digest>": the runtime's local image ID, which no
		// registry serves; the image was not pulled by a repository digest.
		return Running{Problem: fmt.Sprintf("its status' imageID %q names no registry digest, so the image that runs cannot be read; judged by the tag", imageID)}
	}
	named, err := reference.ParseNormalizedNamed(id)
	canonical, ok := named.(reference.Canonical)
	if err != nil || !ok {
		return Running{Problem: fmt.Sprintf("its status' imageID %q does not parse as repository@digest; judged by the tag", imageID)}
	}
	specNamed, err := reference.ParseNormalizedNamed(spec)
	if err != nil {
		return Running{} // the spec's reference is reported invalid by the tag's lookup
	}
	if d, ok := specNamed.(reference.Digested); ok && d.Digest() == canonical.Digest() {
		return Running{Ref: spec}
	}
	ref, err := reference.WithDigest(reference.TrimNamed(specNamed), canonical.Digest())
	if err != nil {
		return Running{Problem: fmt.Sprintf("its status' imageID %q: %v; judged by the tag", imageID, err)}
	}
	r := Running{Ref: ref.String()}
	if canonical.Name() != specNamed.Name() {
		r.From = canonical.Name()
	}
	return r
}

// Images lists the references Find reads for pod: each image's reference (the
// image its controller would start again) and, for a container whose status
// names a digest, the spec's repository at that digest (the image that runs).
// Callers resolve these, for the pods ReadsImages selects.
func Images(pod *v1.Pod) []string {
	seen := map[string]bool{}
	var out []string
	add := func(ref string) {
		if ref != "" && !seen[ref] {
			seen[ref] = true
			out = append(out, ref)
		}
	}
	podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
		add(img.Reference)
		add(RunningImage(pod, img).Ref)
		return true
	})
	return out
}

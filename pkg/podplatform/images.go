// Package podplatform reads what a pod's spec says about platforms: the images
// a node must pull before the pod runs (with the container each belongs to),
// and the os/arch constraints the pod already carries. It reads the spec only:
// no registry, no cluster. The scheduler plugin, the placement mode and the
// kubectl plugin share it, so they agree on which images count.
package podplatform

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ContainerKind says where in the pod spec an image comes from.
type ContainerKind string

const (
	// KindInit is an init container that runs to completion before the others.
	KindInit ContainerKind = "init"
	// KindSidecar is an init container with restartPolicy Always.
	KindSidecar ContainerKind = "sidecar"
	// KindContainer is a regular container.
	KindContainer ContainerKind = "container"
	// KindImageVolume is an image volume's reference (the name is the volume's).
	KindImageVolume ContainerKind = "imageVolume"
)

// Image is one image reference of a pod and where it comes from.
type Image struct {
	Kind ContainerKind
	// Name is the container's name, or the volume's for KindImageVolume.
	Name string
	// Reference is the image reference as written in the spec.
	Reference string
}

// ForEachImage calls fn with every image the node must pull before the pod
// runs, in spec order: init and sidecar containers, containers, then image
// volumes. It stops when fn returns false. Ephemeral containers are ignored:
// they are added after scheduling and cannot influence placement.
func ForEachImage(pod *v1.Pod, fn func(Image) bool) {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		kind := KindInit
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			kind = KindSidecar
		}
		if !fn(Image{Kind: kind, Name: c.Name, Reference: c.Image}) {
			return
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if !fn(Image{Kind: KindContainer, Name: c.Name, Reference: c.Image}) {
			return
		}
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Image != nil && vol.Image.Reference != "" {
			if !fn(Image{Kind: KindImageVolume, Name: vol.Name, Reference: vol.Image.Reference}) {
				return
			}
		}
	}
}

// Images lists the distinct image references of a pod, in ForEachImage's order.
func Images(pod *v1.Pod) []string {
	var out []string
	seen := sets.New[string]()
	ForEachImage(pod, func(img Image) bool {
		if !seen.Has(img.Reference) {
			seen.Insert(img.Reference)
			out = append(out, img.Reference)
		}
		return true
	})
	return out
}

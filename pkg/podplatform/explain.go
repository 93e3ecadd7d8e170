package podplatform

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/pkg/platform"
)

// String names the image for a person, as events and messages do:
// `container "app" (registry.example/app:1)`.
func (img Image) String() string {
	return fmt.Sprintf("%s %q (%s)", kindNames[img.Kind], img.Name, img.Reference)
}

var kindNames = map[ContainerKind]string{
	KindInit:        "init container",
	KindSidecar:     "sidecar",
	KindContainer:   "container",
	KindImageVolume: "image volume",
}

// PlatformsOf returns the platforms an image runs on as the caller knows them (for
// the scheduler, the resolver's cache with the compatibility rules applied); ok is
// false when they are not known.
type PlatformsOf func(Image) (set platform.Set, ok bool)

// Emptying returns the first image, in ForEachImage order, whose platforms share
// none with the images before it, and what those images shared. Images whose
// platforms are not known are passed over. ok is false when the known images have
// a platform in common.
func Emptying(pod *v1.Pod, platformsOf PlatformsOf) (img Image, before platform.Set, ok bool) {
	common := platform.Any()
	ForEachImage(pod, func(i Image) bool {
		set, known := platformsOf(i)
		if !known {
			return true
		}
		next := common.Intersect(set)
		if next.IsEmpty() {
			img, before, ok = i, common, true
			return false
		}
		common = next
		return true
	})
	return img, before, ok
}

// Excluding returns the first image, in ForEachImage order, whose known platforms
// do not run on a node of platform n; ok is false when every known image runs there.
func Excluding(pod *v1.Pod, platformsOf PlatformsOf, n platform.NodePlatform) (img Image, ok bool) {
	ForEachImage(pod, func(i Image) bool {
		if set, known := platformsOf(i); known && !set.MatchesNode(n) {
			img, ok = i, true
			return false
		}
		return true
	})
	return img, ok
}

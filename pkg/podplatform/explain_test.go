package podplatform

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/pkg/platform"
)

func TestEmptyingAndExcluding(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "mesh", Image: "proxy:1", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app", Image: "app:1"}, {Name: "tool", Image: "unknown:1"}, {Name: "legacy", Image: "legacy:1"}},
	}}
	known := map[string]string{
		"proxy:1":  "linux/amd64,linux/arm64",
		"app:1":    "linux/arm64,linux/s390x",
		"legacy:1": "linux/amd64",
	}
	platformsOf := func(img Image) (platform.Set, bool) {
		s, ok := known[img.Reference]
		if !ok {
			return platform.Set{}, false
		}
		set, err := platform.ParseList(s)
		if err != nil {
			t.Fatal(err)
		}
		return set, true
	}

	img, before, ok := Emptying(pod, platformsOf)
	if !ok || img.Name != "legacy" || before.String() != "linux/arm64" {
		t.Errorf("Emptying = %v, %s, %v; want container legacy after linux/arm64 (the unknown image passed over)", img, before, ok)
	}
	if got, want := img.String(), `container "legacy" (legacy:1)`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}

	for _, tc := range []struct {
		node platform.NodePlatform
		want string // "" when every known image runs there
	}{
		{platform.NodePlatform{OS: "linux", Architecture: "amd64"}, `container "app" (app:1)`},
		{platform.NodePlatform{OS: "linux", Architecture: "s390x"}, `sidecar "mesh" (proxy:1)`},
		{platform.NodePlatform{OS: "windows", Architecture: "amd64"}, `sidecar "mesh" (proxy:1)`},
	} {
		img, ok := Excluding(pod, platformsOf, tc.node)
		if got := map[bool]string{true: img.String()}[ok]; got != tc.want {
			t.Errorf("Excluding(%s) = %q, want %q", tc.node, got, tc.want)
		}
	}
	delete(known, "legacy:1")
	if _, _, ok := Emptying(pod, platformsOf); ok {
		t.Error("Emptying found an image although the known images share linux/arm64")
	}
	if img, ok := Excluding(pod, platformsOf, platform.NodePlatform{OS: "linux", Architecture: "arm64"}); ok {
		t.Errorf("Excluding(linux/arm64) = %v, want none", img)
	}
}

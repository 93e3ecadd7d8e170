package podplatform

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestForEachImage(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{
			{Name: "setup", Image: "example.com/setup:1"},
			{Name: "proxy", Image: "example.com/proxy:1", RestartPolicy: &always},
		},
		Containers: []v1.Container{
			{Name: "app", Image: "example.com/app:1"},
			{Name: "again", Image: "example.com/setup:1"},
		},
		EphemeralContainers: []v1.EphemeralContainer{
			{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "example.com/debug:1"}},
		},
		Volumes: []v1.Volume{
			{Name: "data", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "example.com/data:1"}}},
			{Name: "empty-ref", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		},
	}}

	var got []Image
	ForEachImage(pod, func(img Image) bool {
		got = append(got, img)
		return true
	})
	want := []Image{
		{Kind: KindInit, Name: "setup", Reference: "example.com/setup:1"},
		{Kind: KindSidecar, Name: "proxy", Reference: "example.com/proxy:1"},
		{Kind: KindContainer, Name: "app", Reference: "example.com/app:1"},
		{Kind: KindContainer, Name: "again", Reference: "example.com/setup:1"},
		{Kind: KindImageVolume, Name: "data", Reference: "example.com/data:1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ForEachImage (-want +got):\n%s", diff)
	}

	if diff := cmp.Diff([]string{"example.com/setup:1", "example.com/proxy:1", "example.com/app:1", "example.com/data:1"}, Images(pod)); diff != "" {
		t.Errorf("Images (-want +got):\n%s", diff)
	}

	var visited int
	ForEachImage(pod, func(img Image) bool {
		visited++
		return img.Kind != KindSidecar
	})
	if visited != 2 {
		t.Errorf("ForEachImage visited %d images after fn returned false on the second, want 2", visited)
	}
}

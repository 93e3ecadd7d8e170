package scheduling

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// TestWindowsBuildCompatibility follows Microsoft's version-compatibility rules as
// containerd's Windows matcher applies them: from Windows Server 2022 (10.0.20348) on, a
// node runs images of every build from 20348 up to its own; older builds need their own.
func TestWindowsBuildCompatibility(t *testing.T) {
	reg := registrytest.NewMemory(t)
	f := reg.Fixtures(t)
	ltsc2019 := f.Index("win-ltsc2019:v1", registrytest.Docker, "windows/amd64:10.0.17763.6054").Ref
	ltsc2022 := f.Index("win-ltsc2022:v1", registrytest.OCI, "windows/amd64:10.0.20348.2582").Ref
	ltsc2025 := f.Index("win-ltsc2025:v1", registrytest.OCI, "windows/amd64:10.0.26100.1742").Ref
	c := startCluster(t, "failurePolicy: Fail", "")
	c.node("win2019", "windows", "amd64", "10.0.17763")
	c.node("win2022", "windows", "amd64", "10.0.20348")
	c.node("win2025", "windows", "amd64", "10.0.26100")

	tests := []struct {
		name   string
		images []string
		want   sets.Set[string]
	}{
		{name: "ltsc2019", images: []string{ltsc2019}, want: sets.New("win2019")},
		{name: "ltsc2022", images: []string{ltsc2022}, want: sets.New("win2022", "win2025")},
		{name: "ltsc2025", images: []string{ltsc2025}, want: sets.New("win2025")},
		// A 2022 and a 2025 image run together on the 2025 node only.
		{name: "ltsc2022-and-2025", images: []string{ltsc2022, ltsc2025}, want: sets.New("win2025")},
	}
	for _, tc := range tests {
		c.pod(tc.name, tc.images)
	}
	for _, tc := range tests {
		if got := c.scheduledNode(tc.name); !tc.want.Has(got) {
			t.Errorf("pod %s scheduled to %s, want one of %v", tc.name, got, sets.List(tc.want))
		}
	}
	// The 2022 image on a newer node: the pod's own affinity leaves only win2025.
	c.pod("ltsc2022-on-2025", []string{ltsc2022}, onNode("win2025"))
	if got := c.scheduledNode("ltsc2022-on-2025"); got != "win2025" {
		t.Errorf("pod ltsc2022-on-2025 scheduled to %s, want win2025", got)
	}
	// Builds below 20348 never run beside newer ones.
	c.pod("ltsc2019-and-2022", []string{ltsc2019, ltsc2022})
	if msg := c.unschedulableMessage("ltsc2019-and-2022"); !strings.Contains(msg, archfilter.ReasonNoCommonPlatform) {
		t.Errorf("message %q does not contain %q", msg, archfilter.ReasonNoCommonPlatform)
	}
}

// onNode pins a pod to a node by name, through required node affinity.
func onNode(name string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{name}}},
			}}},
		}}
	}
}

// TestLocalhostImage: "localhost/name" is a local build (podman, CRI-O) on the registry
// host localhost, as the kubelet parses it; it is never looked up on Docker Hub, fails at
// once with LocalImage, and the failure policy decides.
func TestLocalhostImage(t *testing.T) {
	const local = "localhost/team/app:v1"
	t.Run("Fail", func(t *testing.T) {
		c := startCluster(t, "failurePolicy: Fail", "")
		c.node("amd64", "linux", "amd64", "")
		c.pod("local", []string{local})
		msg := c.unschedulableMessage("local")
		for _, want := range []string{archfilter.ReasonResolutionFailed, string(resolver.ReasonLocalImage), "registry localhost "} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q does not mention %q", msg, want)
			}
		}
		if strings.Contains(msg, "docker.io") {
			t.Errorf("message %q names Docker Hub", msg)
		}
	})
	t.Run("Ignore-with-fallback", func(t *testing.T) {
		c := startCluster(t, "failurePolicy: Ignore\nfallbackPlatforms: [linux/arm64]", "")
		c.node("amd64", "linux", "amd64", "")
		c.node("arm64", "linux", "arm64", "")
		c.pod("local", []string{local})
		if got := c.scheduledNode("local"); got != "arm64" {
			t.Errorf("pod on %s, want arm64 (fallbackPlatforms)", got)
		}
	})
}

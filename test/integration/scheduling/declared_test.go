package scheduling

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// These scenarios need no registry: platforms come from the pod's annotation,
// so they isolate the scheduling side (PreFilter, Filter, hints, taints).

// noRegistry is an image on an address nothing listens on: any attempt to
// contact it would fail the pod under failurePolicy Fail.
const noRegistry = "127.0.0.1:1/never/contacted:v1"

func declared(platforms string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[annotations.Platforms] = platforms
	}
}

func mixedNodes(c *cluster) {
	c.node("amd64", "linux", "amd64", "")
	c.node("arm64", "linux", "arm64", "")
	c.node("s390x", "linux", "s390x", "")
	c.node("windows", "windows", "amd64", "10.0.17763")
}

func TestDeclaredPlatforms(t *testing.T) {
	c := startCluster(t, "failurePolicy: Fail", "")
	mixedNodes(c)

	for _, tc := range []struct {
		name, platforms, wantNode string
	}{
		{name: "arm64", platforms: "linux/arm64", wantNode: "arm64"},
		{name: "s390x", platforms: "linux/s390x", wantNode: "s390x"},
		{name: "windows", platforms: "windows/amd64", wantNode: "windows"},
		{name: "aarch64-normalised", platforms: "linux/aarch64", wantNode: "arm64"},
	} {
		c.pod(tc.name, []string{noRegistry}, declared(tc.platforms))
		if got := c.scheduledNode(tc.name); got != tc.wantNode {
			t.Errorf("pod %s declared %s: scheduled to %s, want %s", tc.name, tc.platforms, got, tc.wantNode)
		}
	}
}

func TestSkipAnnotationSchedulesAnywhere(t *testing.T) {
	c := startCluster(t, "failurePolicy: Fail", "")
	c.node("arm64", "linux", "arm64", "")
	// Under Fail an unreachable image would stay Pending; skip opts out.
	c.pod("skipped", []string{noRegistry}, func(p *v1.Pod) {
		p.Annotations = map[string]string{annotations.Skip: "true"}
	})
	c.scheduledNode("skipped")
}

func TestOwnAffinityIsIntersected(t *testing.T) {
	c := startCluster(t, "failurePolicy: Fail", "")
	mixedNodes(c)

	// Multi-arch images, but the pod itself asks for s390x.
	c.pod("narrowed", []string{noRegistry}, declared("linux/amd64,linux/arm64,linux/s390x"), func(p *v1.Pod) {
		p.Spec.NodeSelector = map[string]string{v1.LabelArchStable: "s390x"}
	})
	if got := c.scheduledNode("narrowed"); got != "s390x" {
		t.Errorf("narrowed pod on %s, want s390x", got)
	}

	// arm64-only images, but the pod requires amd64 through node affinity.
	c.pod("conflict", []string{noRegistry}, declared("linux/arm64"), func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelArchStable, Operator: v1.NodeSelectorOpIn, Values: []string{"amd64"}}},
			}}},
		}}
	})
	if msg := c.unschedulableMessage("conflict"); !strings.Contains(msg, archfilter.ReasonOwnConstraintConflict) {
		t.Errorf("conflict message %q does not contain %q", msg, archfilter.ReasonOwnConstraintConflict)
	}
}

func TestPodWaitsForNodeOfItsPlatform(t *testing.T) {
	c := startCluster(t, "failurePolicy: Fail", "")
	c.node("amd64", "linux", "amd64", "")
	c.pod("arm-only", []string{noRegistry}, declared("linux/arm64"))
	msg := c.unschedulableMessage("arm-only")
	if !strings.Contains(msg, archfilter.ReasonPlatformMismatch) || !strings.Contains(msg, "linux/arm64") {
		t.Errorf("message %q should say the node does not match linux/arm64", msg)
	}
	// The node-add queueing hint must requeue the pod: no periodic flush needed.
	c.node("arm64", "linux", "arm64", "")
	if got := c.scheduledNode("arm-only"); got != "arm64" {
		t.Errorf("scheduled to %s, want arm64", got)
	}
}

func TestArchTaintToleration(t *testing.T) {
	armTaint := v1.Taint{Key: v1.LabelArchStable, Value: "arm64", Effect: v1.TaintEffectNoSchedule}
	// The profile swaps the in-tree TaintToleration for the arch-aware wrapper.
	swap := `      - name: ArchAwareTaintToleration
      disabled:
      - name: TaintToleration`
	for _, tc := range []struct {
		name       string
		toleration bool
		platforms  string
		wantNode   string // "" means unschedulable
	}{
		{name: "on-arm-image", toleration: true, platforms: "linux/arm64", wantNode: "arm64"},
		{name: "off-arm-image", toleration: false, platforms: "linux/arm64"},
		{name: "on-amd-image", toleration: true, platforms: "linux/amd64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := "failurePolicy: Fail\narchTaintToleration: false"
			if tc.toleration {
				args = "failurePolicy: Fail\narchTaintToleration: true"
			}
			c := startCluster(t, args, swap)
			c.node("arm64", "linux", "arm64", "", armTaint)
			c.pod("p", []string{noRegistry}, declared(tc.platforms))
			if tc.wantNode == "" {
				c.unschedulableMessage("p")
				return
			}
			if got := c.scheduledNode("p"); got != tc.wantNode {
				t.Errorf("scheduled to %s, want %s", got, tc.wantNode)
			}
		})
	}
}

// TestNoRegistryForDeclaredPods checks the pod was never held: a declared pod
// is scheduled without waiting and without a resolution event.
func TestNoRegistryForDeclaredPods(t *testing.T) {
	c := startCluster(t, "failurePolicy: Fail", "")
	c.node("amd64", "linux", "amd64", "")
	c.pod("declared", []string{noRegistry}, declared("linux/amd64"))
	c.scheduledNode("declared")
	c.eventually("events listed", func(ctx context.Context) (bool, error) {
		_, err := c.cs.EventsV1().Events(c.ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if evs := c.eventMessages("declared", archfilter.EventResolutionFailed); len(evs) > 0 {
		t.Errorf("declared pod got resolution events: %v", evs)
	}
}

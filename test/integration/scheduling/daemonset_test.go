package scheduling

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// daemonSetPod makes the pod look like the DaemonSet controller's: owned by a
// DaemonSet and pinned to one node through node affinity on metadata.name.
func daemonSetPod(node string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: types.UID("ds-uid"), Controller: ptr.To(true),
		}}
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
			}}},
		}}
	}
}

func TestDaemonSetPolicy(t *testing.T) {
	reg := registrytest.NewMemory(t)
	amd64Only := reg.Fixtures(t).Image("agent:v1", registrytest.OCI, "linux/amd64").Ref

	t.Run("Skip", func(t *testing.T) {
		c := startCluster(t, "failurePolicy: Fail", "")
		mixedNodes(c)
		c.pod("agent-arm64", []string{amd64Only}, daemonSetPod("arm64"))
		// Not filtered: the controller pinned it, and it is bound where it was pinned...
		if got := c.scheduledNode("agent-arm64"); got != "arm64" {
			t.Errorf("DaemonSet pod scheduled to %s, want its pinned node arm64", got)
		}
		// ...and a person is told it cannot run there.
		c.eventually("mismatch event", func(context.Context) (bool, error) {
			evs := c.eventMessages("agent-arm64", archfilter.EventDaemonSetMismatch)
			return len(evs) > 0 && strings.Contains(evs[0], "linux/amd64"), nil
		})
	})
	t.Run("Enforce", func(t *testing.T) {
		c := startCluster(t, "failurePolicy: Fail\ndaemonSetPolicy: Enforce", "")
		mixedNodes(c)
		c.pod("agent-arm64", []string{amd64Only}, daemonSetPod("arm64"))
		msg := c.unschedulableMessage("agent-arm64")
		if !strings.Contains(msg, "linux/amd64") {
			t.Errorf("message %q should name the images' platform", msg)
		}
	})
}

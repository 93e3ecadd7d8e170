//go:build !k8s1.35

package e2e

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

// TestArchFilterGang: Kubernetes' gang scheduling (GenericWorkload, beta from
// 1.37: a scheduling.k8s.io/v1beta1 PodGroup with a gang policy, pods naming it
// in spec.schedulingGroup). A gang of mixed images, one of which the registry
// answers seconds after the others: ArchFilter holds the members whose images
// are known until the last one's are, so they go to the scheduler together; all
// are bound, each where its image runs.
func TestArchFilterGang(t *testing.T) {
	ctx, ns := setup(t)
	if !framework.ServesPodGroups(env.Client) {
		t.Skipf("not run: the API server does not serve %s PodGroups, which this kube-scheduler's gang scheduling reads "+
			"(beta APIs are off by default; make e2e enables it on the main line's API servers)", framework.PodGroupVersion)
	}
	slow := newSlowRegistry(t, "slow", 3*time.Second)
	g := launchWith(ctx, t, framework.LaunchOptions{
		Replicas:       1,
		ArchFilterArgs: map[string]any{"registries": gangRegistries(slow)},
		ExtraArgs:      []string{"--feature-gates=GenericWorkload=true", "-v=5"},
	})
	members := gangMembers(ctx, t, ns, slow)
	const gang = "gang"
	if err := framework.CreateGangPodGroup(ctx, env.Client, ns, gang, int32(len(members))); err != nil {
		t.Fatal(err)
	}
	var pods []*v1.Pod
	for _, m := range members {
		p := pod(ns, m.name, m.ref, g.SchedulerName())
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(gang)}
		pods = append(pods, p)
	}
	createGang(ctx, t, ns, pods)
	checkGang(ctx, t, ns, members, slow)
	checkHeldForGang(t)
}

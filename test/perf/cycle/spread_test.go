package cycle

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// zones are upstream TopologySpreading's zone label values.
var zones = []string{"moon-1", "moon-2", "moon-3"}

// spreadCases are upstream's TopologySpreading pods, scheduled by the default
// profile and by ArchFilter's; their images run on every architecture of the
// test registry, as upstream's pause image does. BenchmarkSchedulingCycle runs
// them over spreadLayout(benchNodes): what ArchFilter adds to a cycle whose
// PodTopologySpread counts the pods of every node.
var spreadCases = []cycleCase{
	{name: "spread/default", profile: profileDefault, img: imageEverywhere, spread: true},
	{name: "spread/archfilter", profile: profileArchFilter, img: imageEverywhere, spread: true},
}

// spreadLayout is upstream TopologySpreading's cluster at n nodes: its
// node-default nodes (no kubernetes.io/arch or os label) labelled with a zone,
// and two pod-default pods on each (initPods = 2 × initNodes).
func spreadLayout(n int) layout {
	return layout{nodes: n, makeNode: makeZoneNode, podsPerNode: 2}
}

// makeZoneNode is upstream's node-default.yaml with labelNodePrepareStrategy's
// topology.kubernetes.io/zone, round-robin over zones.
func makeZoneNode(i int) *v1.Node {
	node := makeUpstreamNode(i)
	node.Labels = map[string]string{v1.LabelTopologyZone: zones[i%len(zones)]}
	return node
}

// spreadPod gives pod upstream's pod-with-topology-spreading.yaml: label color
// blue, spread over zones with maxSkew 5, DoNotSchedule.
func spreadPod(pod *v1.Pod) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["color"] = "blue"
	pod.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
		MaxSkew: 5, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"color": "blue"}},
	}}
}

// TestSchedulingCycleSpread schedules one pod of each spreading case over a small
// cluster of upstream's layout and checks it landed on one of its nodes.
func TestSchedulingCycleSpread(t *testing.T) {
	ctx := context.Background()
	c := newClusterOf(t, ctx, spreadLayout(30))
	if got, err := c.sched.Cache.PodCount(); err != nil || got != 60 {
		t.Fatalf("the cache holds %d pods (%v), want 60", got, err)
	}
	for _, tc := range spreadCases {
		t.Run(tc.name, func(t *testing.T) {
			pod := c.makePod("spread-check", tc.profile, tc.img, nil)
			spreadPod(pod)
			if len(pod.Spec.TopologySpreadConstraints) != 1 || pod.Labels["color"] != "blue" {
				t.Fatalf("spreadPod: labels %v, constraints %+v", pod.Labels, pod.Spec.TopologySpreadConstraints)
			}
			res, err := c.sched.SchedulePod(ctx, c.sched.Profiles[tc.profile], framework.NewCycleState(), c.queuedPods(t, tc, 1)[0])
			if err != nil {
				t.Fatal(err)
			}
			c.checkPlacements(t, tc, []string{res.SuggestedHost})
		})
	}
}

//go:build !k8s1.35

package archfilter

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestPodEventsReachOnlyTheTargetPod asks the scheduling queue's own matcher
// which pod events reach ArchFilter's hints: the rejected pod's own update
// does; other pods' updates, unscheduled or bound, and pod additions and
// deletions do not.
func TestPodEventsReachOnlyTheTargetPod(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	registered, err := h.pl.EventsToRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reaches := func(incoming fwk.ClusterEvent) bool {
		for _, e := range registered {
			if framework.MatchClusterEvents(e.Event, incoming) {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		event fwk.ClusterEvent
		want  bool
	}{
		{framework.EventTargetPodUpdate, true},
		{fwk.ClusterEvent{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodLabel}, true},
		{framework.EventUnscheduledPodUpdate, false},
		{framework.EventAssignedPodUpdate, false},
		{fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.UpdatePodLabel}, false},
		{framework.EventUnscheduledPodAdd, false},
		{framework.EventAssignedPodAdd, false},
		{framework.EventAssignedPodDelete, false},
		{fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}, true},
	} {
		if got := reaches(tc.event); got != tc.want {
			t.Errorf("%s reaches ArchFilter's hints: %v, want %v", tc.event.Label(), got, tc.want)
		}
	}
}

package archfilter

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
)

const preScoreStateKey fwk.StateKey = "PreScore" + Name

type preScoreState struct {
	// weights answers Score: the weight of the best preference a node matches.
	weights   byPlatform[int64]
	maxWeight int64
}

func (s *preScoreState) Clone() fwk.StateData { return s }

// PreScore picks the pod's platform preferences (package decision: its own
// annotation, else the configured preferredPlatforms). Without any, or when every
// platform of the node table scores alike, scoring is skipped.
func (pl *ArchFilter) PreScore(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if pl.scope.skipReason(pod) != "" {
		return fwk.NewStatus(fwk.Skip)
	}
	prefs, _, invalid := pl.settingsFor(pod).Preferred(pod)
	if invalid != nil {
		pl.events.invalidPreference(pod, invalid)
	}
	if len(prefs) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	s := &preScoreState{weights: newByPlatform(pl.platforms.snapshot(), bestWeight(prefs))}
	if uniform(&s.weights) {
		// Every node the table knows scores alike: the preferences tell no node
		// from another. A node the table does not hold yet goes unpreferred for
		// this cycle: preferences are soft.
		return fwk.NewStatus(fwk.Skip)
	}
	for _, p := range prefs {
		s.maxWeight = max(s.maxWeight, int64(p.Weight))
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// Score is the weight of the best preference the node's platform matches. It reads
// the node's platform, not the pod's images, so run32BitImagesOn needs nothing here: a
// node Filter admits only by the 32-bit rule scores as the node platform it is.
func (pl *ArchFilter) Score(_ context.Context, state fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, err := readPreScoreState(state)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	return s.weights.of(nodeInfo.Node()), nil
}

// readPreScoreState reads PreScore's state. A missing entry, or another
// type under our key, is an error status for this pod, never a panic of the
// scheduler.
func readPreScoreState(state fwk.CycleState) (*preScoreState, error) {
	data, err := state.Read(preScoreStateKey)
	if err != nil {
		return nil, err
	}
	s, ok := data.(*preScoreState)
	if !ok {
		return nil, fmt.Errorf("%s: PreScore state is %T, want *preScoreState", Name, data)
	}
	return s, nil
}

// bestWeight is the weight of the best preference a node's platform matches; 0
// for a node that reports no os/arch.
func bestWeight(prefs []decision.Preference) func(np platform.NodePlatform, known bool) int64 {
	return func(np platform.NodePlatform, known bool) int64 {
		if !known {
			return 0
		}
		var best int64
		for i := range prefs {
			if prefs[i].Platform.Matches(np) {
				best = max(best, int64(prefs[i].Weight))
			}
		}
		return best
	}
}

// ScoreExtensions returns the normaliser.
func (pl *ArchFilter) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore scales weights so the most preferred platform gets the
// framework's maximum node score.
func (pl *ArchFilter) NormalizeScore(_ context.Context, state fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	s, err := readPreScoreState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	maxWeight := s.maxWeight
	for i := range scores {
		scores[i].Score = scores[i].Score * fwk.MaxNodeScore / maxWeight
	}
	return nil
}

package archfilter

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/archfilter/archfilter/apis/config"
)

// BenchmarkScore measures Score on one node with preferredPlatforms configured (two
// preferences, as in the README's example), for a node that matches the top
// preference and one that matches none; and NormalizeScore over the standard cluster.
func BenchmarkScore(b *testing.B) {
	ctx, _ := benchHarness(b)
	args := defaultArgs(b)
	args.PreferredPlatforms = []config.PlatformPreference{{Platform: "linux/arm64", Weight: 80}, {Platform: "linux/amd64", Weight: 20}}
	h := newHarness(b, ctx, harnessConfig{args: args})
	pod := makePod("bench", imgEverywhere).Obj()
	state := framework.NewCycleState()
	if s := h.pl.PreScore(ctx, state, pod, h.infos); !s.IsSuccess() {
		b.Fatalf("PreScore: %v", s)
	}
	for _, bc := range []struct {
		name string
		node string
		want int64
	}{
		{name: "preferred", node: nodeARM64, want: 80},
		{name: "other", node: nodeS390X, want: 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ni := nodeInfo(nodeByName(b, h.nodes, bc.node))
			if got, s := h.pl.Score(ctx, state, pod, ni); !s.IsSuccess() || got != bc.want {
				b.Fatalf("Score(%s) = %d, %v; want %d", bc.node, got, s, bc.want)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				h.pl.Score(ctx, state, pod, ni)
			}
		})
	}
	b.Run("normalize", func(b *testing.B) {
		scores := make(fwk.NodeScoreList, len(h.infos))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			for i, ni := range h.infos {
				scores[i] = fwk.NodeScore{Name: ni.Node().Name, Score: 80}
			}
			if s := h.pl.ScoreExtensions().NormalizeScore(ctx, state, pod, scores); s.Code() != fwk.Success {
				b.Fatalf("NormalizeScore: %v", s)
			}
		}
	})
}

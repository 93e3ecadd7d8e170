package cycle

import (
	"context"
	"runtime"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// interleavedCases are the every-architecture cases BenchmarkSchedulingCycle also
// runs interleaved (its everywhere/interleaved sub-benchmark): the default profile,
// the skip floor and ArchFilter, one cycle of each in turn.
var interleavedCases = []string{"everywhere/default", "everywhere/skip-floor", "everywhere/archfilter"}

// interleavedMetric is the unit of a case's mean time per cycle in the interleaved
// sub-benchmark: "<profile>-ns/cycle".
func interleavedMetric(tc cycleCase) string { return tc.profile + "-ns/cycle" }

// benchInterleaved schedules b.N pods of each case, one cycle of each case in turn
// (the first case of each turn rotating), and reports each case's mean time per
// cycle. Cases measured one after the other drift apart with whatever else the
// machine does between them; cycles taken in turn share it, so the ratio of two
// cases is steadier than the ratio of their separate runs.
func (c *cluster) benchInterleaved(b *testing.B, ctx context.Context, names []string) {
	tcs := make([]cycleCase, len(names))
	pods := make([][]queuedPod, len(names))
	for i, name := range names {
		tcs[i] = caseNamed(b, name)
		pods[i] = c.queuedPods(b, tcs[i], b.N)
	}
	elapsed := make([]time.Duration, len(tcs))
	hosts := make([][]string, len(tcs))
	for i := range hosts {
		hosts[i] = make([]string, b.N)
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		for k := range tcs {
			j := (n + k) % len(tcs)
			fw := c.sched.Profiles[tcs[j].profile]
			start := time.Now()
			res, err := c.sched.SchedulePod(ctx, fw, framework.NewCycleState(), pods[j][n])
			elapsed[j] += time.Since(start)
			if err != nil {
				b.Fatalf("%s, cycle %d: %v", tcs[j].name, n, err)
			}
			hosts[j][n] = res.SuggestedHost
		}
	}
	b.StopTimer()
	for j, tc := range tcs {
		b.ReportMetric(float64(elapsed[j].Nanoseconds())/float64(b.N), interleavedMetric(tc))
		c.checkPlacements(b, tc, hosts[j])
	}
}

// caseNamed is the case of cases called name.
func caseNamed(tb testing.TB, name string) cycleCase {
	tb.Helper()
	for _, tc := range cases {
		if tc.name == name {
			return tc
		}
	}
	tb.Fatalf("no case %q", name)
	return cycleCase{}
}

// TestSchedulingCycleInterleaved runs a few interleaved turns: every case reports
// its time, under its profile's name.
func TestSchedulingCycleInterleaved(t *testing.T) {
	res := testing.Benchmark(func(b *testing.B) {
		ctx := context.Background()
		c := newCluster(b, ctx, 100)
		c.benchInterleaved(b, ctx, interleavedCases)
	})
	for _, name := range interleavedCases {
		unit := interleavedMetric(caseNamed(t, name))
		if v, ok := res.Extra[unit]; !ok || v <= 0 {
			t.Errorf("no %s in %v", unit, res.Extra)
		}
	}
	if res.N == 0 {
		t.Fatalf("the benchmark did not run: %+v", res)
	}
}

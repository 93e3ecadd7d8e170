package benchreport

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cycleLines are BenchmarkSchedulingCycle result lines of one case, a run per time.
func cycleLines(c string, nsPerCycle ...float64) []string {
	var out []string
	for _, v := range nsPerCycle {
		out = append(out, result(cycleBench(c), v, "ns/op", 500000, "B/op", 7000, "allocs/op"))
	}
	return out
}

func TestCycleRows(t *testing.T) {
	const (
		archFilterCase = "multi-arch pods, default + ArchFilter (warm cache)"
		minimalRatio   = "cycles/s ratio ArchFilter / minimal plugin: how close ArchFilter comes to the cost no plugin avoids"
		affinityRatio  = "cycles/s ratio ArchFilter / required nodeAffinity, multi-arch pods"
		everywhere     = "cycles/s ratio ArchFilter / default, images of every architecture, a cycle of each in turn: the cost of turning it on"
		s390xRatio     = "cycles/s ratio ArchFilter / nodeAffinity, s390x-only pods"
		referenceRatio = "for reference: cycles/s ratio ArchFilter / default, multi-arch pods (the default rejects no node)"
	)
	// all are two runs of every case, in µs per cycle, but those of except.
	all := func(everywhereArchFilter float64, except string) []string {
		var lines []string
		for c, v := range map[string]float64{
			"multiarch/default": 1100, "multiarch/minimal": 1200, "multiarch/archfilter": 1210,
			"multiarch-affinity/default": 1450, "everywhere/default": 1000, "everywhere/minimal": 1015, "everywhere/archfilter": everywhereArchFilter,
			"s390x/archfilter": 400, "s390x-affinity/default": 2600, "spread/default": 1800, "spread/archfilter": 1790,
			"everywhere/skip-floor": 1005, "preempt/default": 9000, "preempt/archfilter": 9050,
		} {
			if c != except {
				lines = append(lines, cycleLines(c, v*1000, v*1010)...)
			}
		}
		for _, k := range []float64{1000, 1010} {
			lines = append(lines, result(cycleBench("everywhere/interleaved"), 1000*k, "ns/op",
				k*1000, "default-ns/cycle", k*1005, "skip-floor-ns/cycle", k*everywhereArchFilter, "archfilter-ns/cycle"))
		}
		return lines
	}
	tests := []struct {
		name  string
		lines []string
		want  []verdict
		// wantNotes are parts of the missed rows' notes.
		wantNotes []string
	}{
		{
			name:  "faster than node affinity, 6.5× on s390x, every architecture within 2 %: met",
			lines: all(1010, ""),
			want:  []verdict{{affinityRatio, Met}, {everywhere, Met}, {s390xRatio, Met}},
		},
		{
			name:  "every architecture 3 % slower with ArchFilter: missed, with the spread",
			lines: all(1030, ""),
			want:  []verdict{{affinityRatio, Met}, {everywhere, Missed}, {s390xRatio, Met}},
			wantNotes: []string{
				"ratio 0.97 against a target of 0.98. ",
				"the archfilter profile's cycles in turn ranged 1.03 ms–1.04 ms over 2 runs (±0 % around its median)",
			},
		},
		{
			name:  "ArchFilter's multi-arch case missing: no data for it and its ratios",
			lines: all(1010, "multiarch/archfilter"),
			want: []verdict{{archFilterCase, NoData}, {minimalRatio, NoData}, {affinityRatio, NoData},
				{everywhere, Met}, {s390xRatio, Met}, {referenceRatio, NoData}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []verdict
			var notes []string
			for _, row := range cycleRows(parse(t, tc.lines...)) {
				if row.Section != cycleSection {
					t.Errorf("row %q is in section %q", row.Measurement, row.Section)
				}
				if row.Status == NoCheck {
					continue
				}
				got = append(got, verdict{row.Measurement, row.Status})
				if row.Note != "" {
					notes = append(notes, row.Note)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts (-want,+got):\n%s", diff)
			}
			checkNotes(t, notes, tc.wantNotes)
		})
	}
}

// TestCycleRatioRow: the ratios are of cycles per second, base's time over
// subject's, for the medians and for each round.
func TestCycleRatioRow(t *testing.T) {
	lines := append(cycleLines("multiarch-affinity/default", 1200, 1000), cycleLines("multiarch/archfilter", 1000, 800)...)
	row := cycleRatioRow(parse(t, lines...), cycleRatio{label: "x", base: "multiarch-affinity/default", subject: "multiarch/archfilter", target: 1})
	want := Row{Section: cycleSection, Measurement: "x", Target: "≥ 1.00", Status: Met,
		Result: "1.22; per round 1.20–1.25, ≥ 1.00 in 2 of 2 rounds (sign test: met with 75 % confidence)"}
	if diff := cmp.Diff(want, row); diff != "" {
		t.Errorf("cycleRatioRow (-want,+got):\n%s", diff)
	}
	row = cycleRatioRow(parse(t, lines...), cycleRatio{label: "x", base: "multiarch-affinity/default", subject: "multiarch/archfilter"})
	want = Row{Section: cycleSection, Measurement: "x", Status: NoCheck, Result: "1.22; per round 1.20–1.25"}
	if diff := cmp.Diff(want, row); diff != "" {
		t.Errorf("cycleRatioRow without a target (-want,+got):\n%s", diff)
	}
}

// TestCycleNotes: a missed scheduler_perf target for images of every architecture
// or for s390x-only pods says what the scheduling cycle measured, when a run has it.
func TestCycleNotes(t *testing.T) {
	p := func(testCase string, v float64) string {
		return result(perfName(testCase, smallWorkload), v, throughput)
	}
	perf := []string{p("Everywhere_Default", 400), p("Everywhere_ArchFilter", 360),
		p("S390xOnly_NodeAffinity", 100), p("S390xOnly_ArchFilter", 300)}
	var cycles []string
	for c, v := range map[string]float64{"everywhere/default": 1000, "everywhere/minimal": 1100, "everywhere/archfilter": 1122,
		"s390x-affinity/default": 6000, "s390x/archfilter": 660} {
		cycles = append(cycles, cycleLines(c, v*1000)...)
	}
	for _, tc := range []struct {
		name      string
		lines     []string
		wantNotes []string
	}{
		{name: "with the cycle", lines: append(slices.Clone(perf), cycles...), wantNotes: []string{
			"a minimal Filter plugin that allows every node by its label runs at 0.91 of the default profile's cycles per second, and ArchFilter at 0.98 of the minimal plugin's",
			"One scheduling cycle is 9.1× faster with ArchFilter (run A",
		}},
		{name: "without it", lines: perf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &Run{ID: "A", Scale: small, Results: parse(t, tc.lines...)}
			var notes []string
			for _, row := range throughputRows([]*Run{run}) {
				if row.Note != "" {
					notes = append(notes, row.Note)
				}
			}
			all := strings.Join(notes, "\n")
			if len(notes) != 2 {
				t.Fatalf("want the two missed targets' notes, got:\n%s", all)
			}
			for _, n := range tc.wantNotes {
				if !strings.Contains(all, n) {
					t.Errorf("notes lack %q; they are:\n%s", n, all)
				}
			}
			if len(tc.wantNotes) == 0 && strings.Contains(all, "scheduling cycle") {
				t.Errorf("notes mention a cycle no run measured:\n%s", all)
			}
		})
	}
}

// TestSpreadCycleNote: a missed TopologySpreading row says what the scheduling
// cycle of the same pods measured, with the rounds' range, when a run has it.
func TestSpreadCycleNote(t *testing.T) {
	perf := []string{
		result(perfName("Upstream_TopologySpreading_Default", "500Nodes"), 500, throughput),
		result(perfName("Upstream_TopologySpreading_ArchFilter", "500Nodes"), 400, throughput),
	}
	cycles := append(cycleLines("spread/default", 1.8e6, 2e6), cycleLines("spread/archfilter", 2e6, 1.6e6)...)
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"with the cycle", append(slices.Clone(perf), cycles...),
			"ArchFilter runs at 1.06 of the default profile's cycles per second (rounds 0.90–1.25)."},
		{"without it", perf, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &Run{ID: "A", Scale: small, Results: parse(t, tc.lines...)}
			var missed []Row
			for _, row := range upstreamRows([]*Run{run}) {
				if row.Status == Missed {
					missed = append(missed, row)
				}
			}
			if len(missed) != 1 {
				t.Fatalf("want TopologySpreading's row missed, got %+v", missed)
			}
			note := missed[0].Note
			if strings.Contains(note, ". .") {
				t.Errorf("note %q has an empty sentence", note)
			}
			if tc.want != "" && !strings.Contains(note, tc.want) {
				t.Errorf("note %q lacks %q", note, tc.want)
			}
			if tc.want == "" && strings.Contains(note, "scheduling cycle") {
				t.Errorf("note mentions a cycle no run measured: %q", note)
			}
		})
	}
}

// TestCycleProfileRows reads ArchFilter's CPU time and the process's from go tool
// pprof's header, and the timed cycles' from the pass's benchmark lines, as
// hack/bench writes them.
func TestCycleProfileRows(t *testing.T) {
	const log = "goos: linux\n" +
		"BenchmarkSchedulingCycle/spread/archfilter-2 \t 2000 \t 1329803 ns/op \t 1.000 archfilter-filter-skip \t 2000000 cpu-ns/op \t 811974 B/op\n" +
		"BenchmarkSchedulingCycle/preempt/archfilter-2 \t 300 \t 10911304 ns/op \t 20000000 cpu-ns/op\nPASS\n"
	header := func(accounted string) string {
		return "File: cycle.test\nType: cpu\nActive filters:\n   focus=x\n" +
			"Showing nodes accounting for " + accounted + " total\n      flat  flat%   sum%        cum   cum%\n"
	}
	rows := cycleProfileRows(log, header("20ms, 0.12% of 17s"))
	want := "0.02 s of CPU: 0.20 % of the 10.0 s the timed cycles took (0.12 % of the process's 17.0 s, building the clusters included)"
	if len(rows) != 1 || rows[0].Result != want || rows[0].Status != NoCheck {
		t.Errorf("rows = %+v\nwant result %q", rows, want)
	}
	if rows := cycleProfileRows(log, header("0, 0% of 17s")); len(rows) != 1 || !strings.HasPrefix(rows[0].Result, "0.00 s of CPU: 0.00 %") {
		t.Errorf("no sample in ArchFilter: %+v", rows)
	}
	if rows := cycleProfileRows("", ""); rows != nil {
		t.Errorf("a run without a profile has rows: %+v", rows)
	}
	if rows := cycleProfileRows(log, "garbage"); len(rows) != 1 || rows[0].Status != NoData {
		t.Errorf("an unreadable profile: %+v", rows)
	}
}

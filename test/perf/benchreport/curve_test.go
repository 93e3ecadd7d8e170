package benchreport

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFeasibleNodesToFind: kube-scheduler's numFeasibleNodesToFind with
// percentageOfNodesToScore unset, at the sizes the document names.
func TestFeasibleNodesToFind(t *testing.T) {
	for n, want := range map[int]int{
		50: 50, 99: 99, 100: 100, 200: 100, 500: 230, 1000: 420, 1500: 570, 5000: 500, 5625: 281, 6000: 300, 15000: 750, 100000: 5000,
	} {
		if got := feasibleNodesToFind(n); got != want {
			t.Errorf("feasibleNodesToFind(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestCurveExamined: the nodes each case's cycle examines at 1 000, 5 000 and
// 15 000 nodes, as the method section states them.
func TestCurveExamined(t *testing.T) {
	want := map[string][3]int{
		"multiarch/default":          {420, 500, 750},
		"multiarch/archfilter":       {467, 556, 834},
		"multiarch-affinity/default": {467, 556, 834},
		"everywhere/default":         {420, 500, 750},
		"everywhere/skip-floor":      {420, 500, 750},
		"everywhere/archfilter":      {420, 500, 750},
		"s390x/archfilter":           {100, 230, 570},
		"s390x-affinity/default":     {1000, 5000, 7500},
	}
	for _, c := range curveCases {
		var got [3]int
		for i, n := range []int{1000, 5000, 15000} {
			got[i], _ = c.examined(n)
		}
		if got != want[c.name] {
			t.Errorf("%s examines %v nodes, want %v", c.name, got, want[c.name])
		}
		delete(want, c.name)
	}
	if len(want) > 0 {
		t.Errorf("cases not in curveCases: %v", want)
	}
	i := slices.IndexFunc(curveCases, func(c curveCase) bool { return c.name == "s390x-affinity/default" })
	if ex, scored := curveCases[i].examined(15000); ex != 7500 || scored != 750 {
		t.Errorf("s390x-affinity at 15 000 nodes: %d examined, %d scored; want 7500, 750", ex, scored)
	}
}

// curveLines are BenchmarkSchedulingCycleNodes result lines: case c at each node
// count of nodes, with the time and CPU time per cycle given.
func curveLines(c string, nodes []int, nsPerCycle, cpuPerCycle []float64) []string {
	var out []string
	for i, n := range nodes {
		out = append(out, result(curveBench(n, c), nsPerCycle[i], "ns/op", cpuPerCycle[i], "cpu-ns/op", 500000, "B/op", 7000, "allocs/op"))
	}
	return out
}

// TestCurveGrowth: each verdict of a case's growth, judged by the CPU time.
func TestCurveGrowth(t *testing.T) {
	nodes := []int{1000, 5000, 15000}
	tests := []struct {
		c    string
		cpu  []float64
		want string
	}{
		{"everywhere/default", []float64{1e6, 1.3e6, 1.8e6}, "CPU time per cycle grew ×1.80; the nodes it examines grow ×1.79 (420 → 750): about linear in the nodes examined, so sublinear in the cluster's nodes."},
		{"everywhere/archfilter", []float64{1e6, 1e6, 1.05e6}, ": less than the nodes examined, so a fixed cost per cycle still dominates."},
		{"s390x-affinity/default", []float64{1e6, 5e6, 8e6}, "the nodes it examines grow ×7.50 (1 000 → 7 500): about linear in the nodes examined, so sublinear in the cluster's nodes."},
		{"multiarch/default", []float64{1e6, 4e6, 12e6}, ": more than the nodes examined, up to linear in the cluster's nodes."},
		{"multiarch/archfilter", []float64{1e6, 9e6, 30e6}, ": more than linear in the cluster's nodes."},
	}
	for _, tc := range tests {
		t.Run(tc.c, func(t *testing.T) {
			rows := curveRows(parse(t, curveLines(tc.c, nodes, []float64{1, 2, 3}, tc.cpu)...))
			i := slicesIndex(rows, func(r Row) bool { return strings.HasPrefix(r.Measurement, strings.TrimSuffix(labelOf(tc.c), ")")) })
			if i < 0 {
				t.Fatalf("no row for %s", tc.c)
			}
			if !strings.Contains(rows[i].Result, tc.want) {
				t.Errorf("row of %s:\n%s\nlacks %q", tc.c, rows[i].Result, tc.want)
			}
		})
	}
}

func labelOf(c string) string {
	for _, cc := range curveCases {
		if cc.name == c {
			return cc.label
		}
	}
	return "?"
}

func slicesIndex(rows []Row, f func(Row) bool) int {
	for i, r := range rows {
		if f(r) {
			return i
		}
	}
	return -1
}

// TestCurveRowsNoRun: without the curve, one row says how to measure it.
func TestCurveRowsNoRun(t *testing.T) {
	rows := curveRows(parse(t, cycleLines("everywhere/default", 1e6)...))
	if len(rows) != 1 || rows[0].Status != NoData || !strings.Contains(rows[0].Result, "BENCH_CURVE=") {
		t.Errorf("rows without a curve: %+v", rows)
	}
}

// TestCurveGolden renders the curve's rows and the memory curve from
// testdata/curve/micro.txt, real output of three rounds of BenchmarkSchedulingCycleNodes
// (make bench BENCH_CURVE=1000,5000,15000: the second round reversed) and of
// BenchmarkCacheMemory, and compares them with
// testdata/curve/summary.md. Run with -update after a deliberate change, and read the diff.
func TestCurveGolden(t *testing.T) {
	r := parseFiles(t, "curve/micro.txt")
	run := &Run{ID: "A", Results: r}
	if got := curveRun([]*Run{{ID: "B", Results: NewResults()}, run}); got != run {
		t.Errorf("curveRun picked run %q, want A", got.ID)
	}
	if got := curveNodes(r); !cmp.Equal(got, []int{1000, 5000, 15000}) {
		t.Errorf("curveNodes = %v", got)
	}
	rows := curveRows(r)
	for _, row := range rows {
		if row.Status != NoCheck {
			t.Errorf("row %q: status %s, want none (the curve has no target)", row.Measurement, row.Status)
		}
	}
	var mem []Row
	for _, row := range microRows(r) {
		if strings.Contains(row.Measurement, "against distinct images") {
			mem = append(mem, row)
		}
	}
	if len(mem) != 2 {
		t.Errorf("want the memory curve by tag and by digest, got %d rows", len(mem))
	}
	got := Table(append(rows, mem...), false)
	golden := filepath.Join("testdata", "curve", "summary.md")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("curve rows (-want,+got):\n%s", diff)
	}
}

// TestCacheCurveRow: the memory curve's verdict, and no row from one size alone.
func TestCacheCurveRow(t *testing.T) {
	line := func(name string, perImage float64) string {
		return result(name, 1e6, "ns/op", perImage, "B/image", perImage, "B/entry")
	}
	if _, ok := cacheCurveRow(parse(t, line("BenchmarkCacheMemory/tag", 370)), "tag"); ok {
		t.Error("a row from one size")
	}
	for _, tc := range []struct {
		big  float64
		want string
	}{
		{400, "changed ×1.08: constant per image"},
		{600, "changed ×1.62: it grows per image, so more than linear"},
		{200, "changed ×0.54: it falls per image"},
	} {
		row, ok := cacheCurveRow(parse(t, line("BenchmarkCacheMemory/tag", 370), line("BenchmarkCacheMemory/tag-100000", tc.big),
			line("BenchmarkCacheMemory/tagged-5", 1)), "tag")
		if !ok {
			t.Fatal("no row")
		}
		if !strings.Contains(row.Result, tc.want) || !strings.Contains(row.Result, "10 000 images: 370 B per image, 3.5 MiB in all") {
			t.Errorf("row: %s\nwant %q", row.Result, tc.want)
		}
		if strings.Contains(row.Result, "5 images") {
			t.Errorf("row counts BenchmarkCacheMemory/tagged-5: %s", row.Result)
		}
	}
}

// TestEverywhereLabel: the every-architecture case says whether its run skipped
// ArchFilter's Filter, and says neither for a run that does not report it.
func TestEverywhereLabel(t *testing.T) {
	const base = "images of every node architecture, default + ArchFilter (rejects no node"
	for _, tc := range []struct {
		name  string
		extra []any
		want  string
		note  string
	}{
		{"skipped", []any{1, filterSkipMetric}, base + labelFilterSkipped + ")", "that run's cycles skipped ArchFilter's Filter"},
		{"called", []any{0, filterSkipMetric}, base + labelFilterCalled + ")", "that run's cycles called ArchFilter's Filter on every examined node"},
		{"not reported", nil, base + ")", "of the minimal plugin's."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := append(cycleLines("everywhere/default", 1e6), cycleLines("everywhere/minimal", 1.1e6)...)
			lines = append(lines, result(cycleBench("everywhere/archfilter"), append([]any{1.05e6, "ns/op", 7000, "allocs/op"}, tc.extra...)...))
			r := parse(t, lines...)
			found := false
			for _, row := range cycleRows(r) {
				if strings.HasPrefix(row.Measurement, base) {
					found = true
					if row.Measurement != tc.want {
						t.Errorf("label %q, want %q", row.Measurement, tc.want)
					}
				}
			}
			if !found {
				t.Error("no every-architecture ArchFilter row")
			}
			note := everywhereCycleNote(&Run{ID: "A", Results: r})
			if !strings.Contains(note, tc.note) {
				t.Errorf("note %q lacks %q", note, tc.note)
			}
			if tc.extra == nil && strings.Contains(note, "Filter plugin called on every examined node") {
				t.Errorf("a run that does not say what it measured is explained: %q", note)
			}
		})
	}
}

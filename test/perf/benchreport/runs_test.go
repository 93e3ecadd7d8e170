package benchreport

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testRun is run id of the named scale, finished at date, that printed lines.
func testRun(t *testing.T, id, scale, date string, lines ...string) *Run {
	t.Helper()
	sc, err := LookupScale(scale)
	if err != nil {
		t.Fatal(err)
	}
	return &Run{ID: id, Scale: sc, Machine: "date\t" + date, Results: parse(t, lines...)}
}

// at is a result line of a test case's workload at a scale, with a throughput.
func at(scale, testCase string, tput float64) string {
	sc, _ := LookupScale(scale)
	return result(perfName(testCase, sc.Workload), tput, throughput)
}

// fromWhich is the run a summary row came from.
type fromWhich struct {
	Measurement, Run string
	Status           Status
}

func TestSummaryRunPerRow(t *testing.T) {
	const (
		mixedRatio = mixedReferenceRatio
		lastRatio  = "for comparison: ArchFilter under multiPoint only (last among the Filter plugins), ratio to default"
		s390xRatio = "speed-up ArchFilter / nodeAffinity"
		early      = "2026-11-26 04:58 UTC"
		late       = "2026-11-26 07:55 UTC"
	)
	mixedPair := func(scale string) []string {
		return []string{at(scale, "MixedArch_Default", 400), at(scale, "MixedArch_ArchFilter", 396)}
	}
	upstream := func(testCase, workload string) []string {
		return []string{result(perfName(testCase+"_Default", workload), 400, throughput),
			result(perfName(testCase+"_ArchFilter", workload), 396, throughput)}
	}
	tests := []struct {
		name string
		runs func(t *testing.T) []*Run
		// want are the rows named here, in the summary's order, with their run.
		want []fromWhich
	}{
		{
			name: "the pair at both scales: the larger's, whichever is given first",
			runs: func(t *testing.T) []*Run {
				return []*Run{testRun(t, "A", "small", late, mixedPair("small")...), testRun(t, "B", "full", early, mixedPair("full")...)}
			},
			want: []fromWhich{{mixedRatio, "B", NoCheck}},
		},
		{
			name: "two runs of one scale have the pair: the newest's",
			runs: func(t *testing.T) []*Run {
				return []*Run{testRun(t, "A", "small", late, mixedPair("small")...), testRun(t, "B", "small", early, mixedPair("small")...)}
			},
			want: []fromWhich{{mixedRatio, "A", NoCheck}},
		},
		{
			name: "one side at the larger scale only: the smaller run that has both, no ratio across runs",
			runs: func(t *testing.T) []*Run {
				return []*Run{testRun(t, "A", "full", late, at("full", "MixedArch_Default", 300)),
					testRun(t, "B", "small", early, mixedPair("small")...)}
			},
			want: []fromWhich{{mixedRatio, "B", NoCheck}},
		},
		{
			name: "the reference variant left out of the full run (-variant): its row from the small run, the pair from the full",
			runs: func(t *testing.T) []*Run {
				return []*Run{testRun(t, "A", "full", late, mixedPair("full")...),
					testRun(t, "B", "small", early, append(mixedPair("small"), at("small", "MixedArch_ArchFilterLast", 350))...)}
			},
			want: []fromWhich{{mixedRatio, "A", NoCheck}, {lastRatio, "B", NoCheck}},
		},
		{
			name: "a pair no run measured: no data, from no run",
			runs: func(t *testing.T) []*Run {
				return []*Run{testRun(t, "A", "full", late, mixedPair("full")...), testRun(t, "B", "small", early, mixedPair("small")...)}
			},
			want: []fromWhich{{mixedRatio, "A", NoCheck}, {s390xRatio, "", NoData}},
		},
		{
			name: "one side in one run, the other in another: no data, never a ratio across them",
			runs: func(t *testing.T) []*Run {
				return []*Run{testRun(t, "A", "full", late, at("full", "S390xOnly_NodeAffinity", 100)),
					testRun(t, "B", "small", early, at("small", "S390xOnly_ArchFilter", 440))}
			},
			want: []fromWhich{{s390xRatio, "A", NoData}},
		},
		{
			name: "upstream test cases at their own sizes: the larger scale's workload",
			runs: func(t *testing.T) []*Run {
				return []*Run{
					testRun(t, "A", "small", late, append(upstream("Upstream_SchedulingBasic", "500Nodes"),
						upstream("Upstream_PreemptionBasic", "500Nodes")...)...),
					testRun(t, "B", "full", early, upstream("Upstream_PreemptionBasic", "1000Nodes")...),
				}
			},
			want: []fromWhich{
				{"SchedulingBasic (500Nodes)", "A", Met},
				{"PreemptionBasic (1000Nodes)", "B", Met},
			},
		},
		{
			name: "micro-benchmarks from the newest run that has them, whatever its scale",
			runs: func(t *testing.T) []*Run {
				filter := func(allocs int) string {
					return result("BenchmarkFilter/accept", 100, "ns/op", 0, "B/op", allocs, "allocs/op")
				}
				return []*Run{
					testRun(t, "A", "full", early, filter(1)),
					testRun(t, "B", "small", late, filter(0)),
					testRun(t, "C", "small", "2026-11-26 09:00 UTC", mixedPair("small")...), // perf only
				}
			},
			want: []fromWhich{{"ArchFilter Filter, node accepted", "B", Met}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			named := map[string]bool{}
			for _, w := range tc.want {
				named[w.Measurement] = true
			}
			var got []fromWhich
			for _, row := range Summary(tc.runs(t)) {
				if named[row.Measurement] {
					got = append(got, fromWhich{row.Measurement, row.Run, row.Status})
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rows and their runs (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPick(t *testing.T) {
	run := func(id, scale, date string) *Run {
		sc, _ := LookupScale(scale)
		return &Run{ID: id, Scale: sc, Machine: "date\t" + date}
	}
	all := func(*Run) bool { return true }
	tests := []struct {
		name   string
		runs   []*Run
		ok     func(*Run) bool
		want   string // pick's run, "" for none
		newest string // newest's
	}{
		{
			name: "largest scale first, newest on a tie",
			runs: []*Run{run("A", "small", "2026-11-26 09:00 UTC"), run("B", "full", "2026-11-25 09:00 UTC"),
				run("C", "full", "2026-11-26 08:00 UTC")},
			ok: all, want: "C", newest: "A",
		},
		{
			name: "equal dates: the first given",
			runs: []*Run{run("A", "full", "2026-11-26 09:00 UTC"), run("B", "full", "2026-11-26 09:00 UTC")},
			ok:   all, want: "A", newest: "A",
		},
		{
			name: "a run without a date is older than any with one",
			runs: []*Run{run("A", "small", ""), run("B", "small", "2026-11-26 09:00 UTC")},
			ok:   all, want: "B", newest: "B",
		},
		{
			name: "only the runs that qualify",
			runs: []*Run{run("A", "full", "2026-11-26 09:00 UTC"), run("B", "smoke", "2026-11-20 09:00 UTC")},
			ok:   func(r *Run) bool { return r.ID == "B" }, want: "B", newest: "B",
		},
		{
			name: "none qualifies",
			runs: []*Run{run("A", "full", "2026-11-26 09:00 UTC")},
			ok:   func(*Run) bool { return false },
		},
	}
	id := func(r *Run) string {
		if r == nil {
			return ""
		}
		return r.ID
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := id(pick(tc.runs, tc.ok)); got != tc.want {
				t.Errorf("pick = run %q, want %q", got, tc.want)
			}
			if got := id(newest(tc.runs, tc.ok)); got != tc.newest {
				t.Errorf("newest = run %q, want %q", got, tc.newest)
			}
		})
	}
}

// TestDocumentRuns checks that a document of several runs names, for every figure,
// the run it comes from, and that a document of one run reads as before.
func TestDocumentRuns(t *testing.T) {
	full := testRun(t, "A", "full", "2026-11-26 07:55 UTC",
		at("full", "S390xOnly_NodeAffinity", 100), at("full", "S390xOnly_ArchFilter", 300))
	full.Dir, full.Recorded, full.Labels, full.Commit, full.Rounds = "full-pairs", true, "archfilter,-variant,-cache", "2eca7ed-dirty", "5"
	full.PerfBenchstat, full.ProfileTop = "full perf stat", "full profile"
	smallRun := testRun(t, "B", "small", "2026-11-26 04:58 UTC",
		at("small", "MixedArch_Default", 400), at("small", "MixedArch_ArchFilter", 396),
		result(perfName("ColdCache_ArchFilter", smallWorkload), 12.5, allBound, 0, extra, 1000, held),
		result("BenchmarkFilter/accept", 100, "ns/op", 0, "B/op", 0, "allocs/op"), "--- FAIL: BenchmarkScore/other")
	smallRun.Dir, smallRun.PerfBenchstat, smallRun.MicroBenchstat, smallRun.ProfileTop = "small-20261126T040841Z", "small perf stat", "small micro stat", "small profile"
	unused := testRun(t, "C", "smoke", "2026-11-20 10:00 UTC", at("smoke", "S390xOnly_NodeAffinity", 50), at("smoke", "S390xOnly_ArchFilter", 60))
	unused.Dir, unused.PerfBenchstat = "smoke-20261120T100000Z", "smoke perf stat"
	runs := []*Run{full, smallRun, unused}

	tests := []struct {
		name         string
		runs         []*Run
		want, reject []string // parts the document has, and has not
	}{
		{
			name: "several runs: each named with what it covered, a column per run, the run of every figure",
			runs: runs,
			want: []string{
				"This document combines 3 runs of `make bench`",
				"- **Run A** (`full-pairs`): `BENCH_SCALE=full`, 5 000 nodes, 10 000 pods per workload (the issue's figures); " +
					"`BENCH_LABELS=archfilter,-variant,-cache`; 5 rounds; commit 2eca7ed-dirty; finished 2026-11-26 07:55 UTC. " +
					"Measured 2 scheduler_perf workload(s) and 0 micro-benchmark(s). Used here for: Throughput: s390x-only pods; the CPU profile.",
				"- **Run B** (`small-20261126T040841Z`): `BENCH_SCALE=small`, 500 nodes, 2 000 pods per workload; finished 2026-11-26 04:58 UTC. " +
					"Measured 3 scheduler_perf workload(s) and 1 micro-benchmark(s). Used here for: Throughput: mixed nodes, multi-arch pods; " +
					"Throughput: mixed nodes, multi-arch pods, against hand-written affinity; Cold cache: 1 000 distinct images, registry +20 ms; Micro-benchmarks (per call, median).",
				"- **Run C** (`smoke-20261120T100000Z`): `BENCH_SCALE=smoke`, 50 nodes, 100 pods per workload (CI smoke); finished 2026-11-20 10:00 UTC. " +
					"Measured 2 scheduler_perf workload(s) and 0 micro-benchmark(s). Not used here",
				"| | run A | run B | run C |\n|---|---|---|---|\n| run directory | `full-pairs` | `small-20261126T040841Z` | `smoke-20261120T100000Z` |\n" +
					"| commit | 2eca7ed-dirty | — | — |\n| BENCH_LABELS | archfilter,-variant,-cache | — | — |\n",
				"| measurement | result | target | status | run |",
				"| speed-up ArchFilter / nodeAffinity | 3.00 | ≥ 4.00 | **missed** | A |",
				"| " + mixedReferenceRatio + " | 0.99 | — | — | B |",
				"| ArchFilter Filter, node accepted | 100 ns/op, 0 allocs/op, 0 B/op | 0 allocs/op | met | B |",
				"| default profile, pods with required nodeAffinity kubernetes.io/arch In [amd64, arm64] | no result | — | **no data** | B |",
				"### Targets missed\n\n- **Throughput: s390x-only pods — speed-up ArchFilter / nodeAffinity** (run A, `BENCH_SCALE=full`): ratio 3.00",
				"### Benchmarks that failed in these runs",
				"- `BenchmarkScore/other` (run B)",
				"**Several runs.**",
				"From run A: `BENCH_SCALE=full`, `BENCH_LABELS=archfilter,-variant,-cache`, 2026-11-26 07:55 UTC, commit 2eca7ed-dirty.\n",
				"### Micro-benchmarks, run B\n\n```\nsmall micro stat\n```",
				"### scheduler_perf workloads (test/perf), run A\n\n```\nfull perf stat\n```",
				"### scheduler_perf workloads (test/perf), run B\n\n```\nsmall perf stat\n```",
			},
			reject: []string{"smoke perf stat", "small profile", "in this run", "Measured on"},
		},
		{
			name: "one run: as before, no run column",
			runs: []*Run{smallRun},
			want: []string{
				"Measured on 2026-11-26 04:58 UTC with `BENCH_SCALE=small`: 500 nodes, 2 000 pods per workload. Every figure below comes from that one run",
				"## Machine\n\n| | |\n|---|---|\n| run directory | `small-20261126T040841Z` |\n| date | 2026-11-26 04:58 UTC |\n",
				"| measurement | result | target | status |\n",
				"### Benchmarks that failed in this run",
				"- `BenchmarkScore/other`\n",
				"### Micro-benchmarks\n\n```\nsmall micro stat\n```\n\n### scheduler_perf workloads (test/perf)\n\n```\nsmall perf stat\n```",
			},
			reject: []string{"| run |", "run B", "**Several runs.**"},
		},
		{
			name: "one run that recorded its labels and commit: the opening sentence says so",
			runs: []*Run{full},
			want: []string{
				"with `BENCH_SCALE=full`: 5 000 nodes, 10 000 pods per workload (the issue's figures) " +
					"(only the workloads of `BENCH_LABELS=archfilter,-variant,-cache`, commit 2eca7ed-dirty). Every figure below comes from that one run",
				"| commit | 2eca7ed-dirty |\n| BENCH_LABELS | archfilter,-variant,-cache |\n",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := Document(tc.runs, Summary(tc.runs))
			for _, w := range tc.want {
				if !strings.Contains(doc, w) {
					t.Errorf("the document lacks %q", w)
				}
			}
			for _, r := range tc.reject {
				if strings.Contains(doc, r) {
					t.Errorf("the document has %q", r)
				}
			}
			if t.Failed() {
				t.Logf("document:\n%s", doc)
			}
		})
	}
}

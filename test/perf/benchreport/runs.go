package benchreport

import (
	"fmt"
	"slices"
	"strings"
)

// Run is one invocation of the benchmarks (one run directory of make bench): what it
// ran, what it measured and its raw outputs. The document may combine several, but
// every comparison takes one run.
type Run struct {
	// ID names the run in the document: A, B, …
	ID string
	// Dir is the run directory's name, shown so its raw outputs can be found.
	Dir   string
	Scale Scale
	// Recorded says the run recorded Labels and Commit (its run.env); older runs did not.
	Recorded bool
	// Labels is the run's BENCH_LABELS: empty when it ran every workload of its scale.
	Labels string
	// NoPerf says the run left scheduler_perf out (BENCH_PERF=false).
	NoPerf bool
	// Rounds is BENCH_ROUNDS, Commit the commit measured ("-dirty" for a changed tree);
	// empty when unknown.
	Rounds, Commit string
	// Machine describes the machine and the run: one "key<TAB>value" per line, "date" among them.
	Machine string
	// Results are the micro-benchmarks' and the scheduler_perf workloads'.
	Results *Results
	// MicroBenchstat and PerfBenchstat are benchstat's output, shown as they are.
	MicroBenchstat, PerfBenchstat string
	// ProfileTop and ProfileArchFilter are go tool pprof -top tables of the CPU
	// profile of the scheduler_perf run: the whole process, and ArchFilter's own
	// functions (plugin and resolver). Empty when no profile was taken.
	ProfileTop, ProfileArchFilter string
	// CycleProfileLog is the output of the profiled pass of the scheduling cycle's
	// upstream cases with ArchFilter (spread and preempt), and CycleProfileArchFilter
	// go tool pprof -top of its profile, focused on ArchFilter's extension points.
	// Empty when none was taken.
	CycleProfileLog, CycleProfileArchFilter string
}

// date is when the run finished, as its machine description says ("2026-11-26 04:58 UTC",
// which sorts as time does), or "" when it does not say.
func (run *Run) date() string {
	for _, kv := range machineFacts(run.Machine) {
		if kv[0] == "date" {
			return kv[1]
		}
	}
	return ""
}

// workloads says which scheduler_perf workloads the run ran: none, those of its
// labels, every one of its scale, or "" when the run did not record it.
func (run *Run) workloads() string {
	switch {
	case run.NoPerf:
		return "no scheduler_perf workload (`BENCH_PERF=false`)"
	case run.Labels != "":
		return "`BENCH_LABELS=" + run.Labels + "`"
	case run.Recorded:
		return "every workload"
	}
	return ""
}

// describe says which run this is, for a line under a section's header.
func (run *Run) describe() string {
	parts := []string{"`BENCH_SCALE=" + run.Scale.Name + "`"}
	if run.NoPerf || run.Labels != "" {
		parts = append(parts, run.workloads())
	}
	if d := run.date(); d != "" {
		parts = append(parts, d)
	}
	if run.Commit != "" {
		parts = append(parts, "commit "+run.Commit)
	}
	return "run " + run.ID + ": " + strings.Join(parts, ", ")
}

// noRun stands for the run of a comparison that no run measured: its rows say
// "no result" and name no run.
func noRun() *Run { return &Run{Results: NewResults()} }

// pick returns the run of the largest scale for which ok holds, the newest of them
// on a tie (the first given when their dates are equal), or nil when it holds for none.
func pick(runs []*Run, ok func(*Run) bool) *Run {
	var best *Run
	for _, run := range runs {
		if !ok(run) {
			continue
		}
		if best == nil || run.Scale.rank() > best.Scale.rank() ||
			run.Scale.rank() == best.Scale.rank() && run.date() > best.date() {
			best = run
		}
	}
	return best
}

// newest returns the newest run for which ok holds (the first given when their
// dates are equal), or nil when it holds for none.
func newest(runs []*Run, ok func(*Run) bool) *Run {
	var best *Run
	for _, run := range runs {
		if ok(run) && (best == nil || run.date() > best.date()) {
			best = run
		}
	}
	return best
}

// measured says whether a run measured every one of the test cases at its scale's workload.
func measured(testCases ...string) func(*Run) bool {
	return func(run *Run) bool {
		for _, tc := range testCases {
			if !run.Results.has(perfName(tc, run.Scale.Workload)) {
				return false
			}
		}
		return true
	}
}

// pickPair returns the run whose figures compare base and subject: the run of the
// largest scale that measured both, the newest on a tie. Failing that, the one that
// measured either, so the rows show what there is; failing that, noRun. A ratio of
// two runs' figures would compare different loads, commits or scales.
func pickPair(runs []*Run, base, subject string) *Run {
	if run := pick(runs, measured(base, subject)); run != nil {
		return run
	}
	either := func(run *Run) bool { return measured(base)(run) || measured(subject)(run) }
	if run := pick(runs, either); run != nil {
		return run
	}
	return noRun()
}

// microRun is the run the micro-benchmark rows come from: the newest that has them.
// They need no partner from the same run, and the newest measures the current code.
func microRun(runs []*Run) *Run {
	if run := newest(runs, func(run *Run) bool { return run.Results.hasMicro() }); run != nil {
		return run
	}
	return noRun()
}

// profileRun is the run whose CPU profile the document shows: the largest scale's that
// has one, where ArchFilter's share is closest to the cluster. Nil if none has.
func profileRun(runs []*Run) *Run {
	return pick(runs, func(run *Run) bool { return run.ProfileTop != "" || run.ProfileArchFilter != "" })
}

// fromRun marks rows as taken from run.
func fromRun(run *Run, rows []Row) []Row {
	for i := range rows {
		rows[i].Run = run.ID
	}
	return rows
}

// RunID names the i-th run given (from 0): A, B, … Z.
func RunID(i int) (string, error) {
	if i < 0 || i >= 26 {
		return "", fmt.Errorf("at most 26 runs, not %d", i+1)
	}
	return string(rune('A' + i)), nil
}

// usedRuns lists the runs rows or the profile come from, in the order given.
func usedRuns(runs []*Run, rows []Row) []*Run {
	ids := map[string]bool{}
	for _, rw := range rows {
		ids[rw.Run] = true
	}
	if p := profileRun(runs); p != nil {
		ids[p.ID] = true
	}
	return slices.DeleteFunc(slices.Clone(runs), func(run *Run) bool { return !ids[run.ID] })
}

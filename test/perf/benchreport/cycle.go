package benchreport

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// cycleSection is the summary section of test/perf/cycle's BenchmarkSchedulingCycle.
const cycleSection = "Scheduling cycle, 5 000 nodes (SchedulePod, no apiserver)"

// nsPerOp is go test's unit of time per iteration: per scheduling cycle here.
const nsPerOp = "ns/op"

// cycleBench is the benchmark of one case of BenchmarkSchedulingCycle, "<pods>/<profile>".
func cycleBench(c string) string { return "BenchmarkSchedulingCycle/" + c }

// filterSkipMetric is test/perf/cycle's metric of the ArchFilter cases: 1 when the
// case's cycles skipped ArchFilter's Filter (its PreFilter returned Skip), 0 when they
// called it. Runs of code before the skip do not report it.
const filterSkipMetric = "archfilter-filter-skip"

// filterSkip says whether the run's cycles of benchmark name skipped ArchFilter's
// Filter, and whether the run says (known) at all.
func filterSkip(r *Results, name string) (skipped, known bool) {
	v, ok := r.median(name, filterSkipMetric)
	return ok && v == 1, ok
}

// Suffixes of a skippable case's label: what the run says of ArchFilter's Filter.
const (
	labelFilterSkipped = "; PreFilter skips its Filter, Reserve checks the chosen node"
	labelFilterCalled  = "; its Filter called on every examined node"
)

// skipLabel completes the label of a skippable case, which ends in an open
// parenthesis, with what benchmark name's run says of ArchFilter's Filter, if it says.
func skipLabel(r *Results, name, label string) string {
	switch skipped, known := filterSkip(r, name); {
	case skipped:
		label += labelFilterSkipped
	case known:
		label += labelFilterCalled
	}
	return label + ")"
}

// cycleCases are BenchmarkSchedulingCycle's cases, in the summary's order. A
// skippable case's label says, when the run reports it, whether ArchFilter's Filter
// ran; the label of a run that does not report it names neither.
var cycleCases = []struct {
	name, label string
	skippable   bool
}{
	{"multiarch/default", "multi-arch pods (amd64, arm64), default profile: accepts the s390x nodes, where they cannot run (reference)", false},
	{"multiarch/minimal", "multi-arch pods, default + a minimal Filter plugin rejecting the s390x nodes by label", false},
	{"multiarch/archfilter", "multi-arch pods, default + ArchFilter (warm cache)", false},
	{"multiarch-affinity/default", "multi-arch pods with required nodeAffinity kubernetes.io/arch In [amd64, arm64], default profile", false},
	{"everywhere/default", "images of every node architecture, default profile", false},
	{"everywhere/minimal", "images of every node architecture, default + a minimal Filter plugin allowing every architecture by label", false},
	{"everywhere/skip-floor", "images of every node architecture, default + a plugin whose PreFilter always returns Skip (what the framework charges a Filter plugin that is skipped)", false},
	{"everywhere/archfilter", "images of every node architecture, default + ArchFilter (rejects no node", true},
	{"s390x/archfilter", "s390x-only pods, default + ArchFilter (PreFilterResult node index)", false},
	{"s390x-affinity/default", "s390x-only pods with required nodeAffinity In [s390x], default profile", false},
	{"spread/default", "upstream TopologySpreading's pods (zone spread, 2 bound pods per node, no node labelled with an architecture), default profile", false},
	{"spread/archfilter", "upstream TopologySpreading's pods, default + ArchFilter (warm cache", true},
	{"preempt/default", "upstream PreemptionBasic's high-priority pods (4 low-priority pods fill each node: Filter rejects every node, then DefaultPreemption dry-runs its candidates), default profile", false},
	{"preempt/archfilter", "upstream PreemptionBasic's high-priority pods, default + ArchFilter (warm cache", true},
}

// cycleRatio compares two cases of BenchmarkSchedulingCycle by cycles per second:
// subject's over base's, the inverse ratio of their times per cycle.
type cycleRatio struct {
	label         string
	base, subject string
	target        float64 // 0: none
	// interleaved: base and subject are profiles of the everywhere/interleaved
	// sub-benchmark (a cycle of each in turn), compared by their <profile>-ns/cycle.
	interleaved bool
}

// interleavedBench is BenchmarkSchedulingCycle's sub-benchmark that runs the
// every-architecture cases a cycle of each in turn.
const interleavedBench = "everywhere/interleaved"

// measure is the benchmark and unit of side (a case, or a profile of the
// interleaved sub-benchmark) of c.
func (c cycleRatio) measure(side string) (name, unit string) {
	if c.interleaved {
		return cycleBench(interleavedBench), side + "-ns/cycle"
	}
	return cycleBench(side), nsPerOp
}

var cycleRatios = []cycleRatio{
	{"cycles/s ratio ArchFilter / minimal plugin: how close ArchFilter comes to the cost no plugin avoids",
		"multiarch/minimal", "multiarch/archfilter", 0, false},
	{"cycles/s ratio ArchFilter / required nodeAffinity, multi-arch pods",
		"multiarch-affinity/default", "multiarch/archfilter", 1.0, false},
	{"cycles/s ratio ArchFilter / default, images of every architecture, a cycle of each in turn: the cost of turning it on",
		"default", "archfilter", 0.98, true},
	{"cycles/s ratio skip floor / default, images of every architecture, a cycle of each in turn",
		"default", "skip-floor", 0, true},
	{"cycles/s ratio ArchFilter / skip floor, images of every architecture, a cycle of each in turn",
		"skip-floor", "archfilter", 0, true},
	{"cycles/s ratio ArchFilter / default, images of every architecture, each case run on its own (drifts with the machine; the target is judged on the cycles in turn above)",
		"everywhere/default", "everywhere/archfilter", 0, false},
	{"cycles/s ratio minimal plugin / default, images of every architecture: what any Filter plugin checking the architecture costs",
		"everywhere/default", "everywhere/minimal", 0, false},
	{"cycles/s ratio ArchFilter / minimal plugin, images of every architecture",
		"everywhere/minimal", "everywhere/archfilter", 0, false},
	{"cycles/s ratio skip floor / default, images of every architecture: what any Filter plugin costs when its PreFilter returns Skip",
		"everywhere/default", "everywhere/skip-floor", 0, false},
	{"cycles/s ratio ArchFilter / skip floor, images of every architecture: ArchFilter's own cost above that floor",
		"everywhere/skip-floor", "everywhere/archfilter", 0, false},
	{"cycles/s ratio ArchFilter / nodeAffinity, s390x-only pods",
		"s390x-affinity/default", "s390x/archfilter", 4, false},
	{"for reference: cycles/s ratio ArchFilter / default, multi-arch pods (the default rejects no node)",
		"multiarch/default", "multiarch/archfilter", 0, false},
	{"cycles/s ratio ArchFilter / default, upstream TopologySpreading's pods: what ArchFilter adds to that workload's cycle",
		"spread/default", "spread/archfilter", 0, false},
	{"cycles/s ratio ArchFilter / default, upstream PreemptionBasic's pods: what ArchFilter adds to a failed cycle and its preemption",
		"preempt/default", "preempt/archfilter", 0, false},
}

// cycleRun is the run the scheduling cycle's rows come from: the newest that ran
// BenchmarkSchedulingCycle (every ratio pairs cases of that one run), or noRun.
func cycleRun(runs []*Run) *Run {
	ran := func(run *Run) bool {
		return slices.ContainsFunc(run.Results.names(), func(n string) bool { return strings.HasPrefix(n, cycleBench("")) })
	}
	if run := newest(runs, ran); run != nil {
		return run
	}
	return noRun()
}

func cycleRows(r *Results) []Row {
	var rows []Row
	for _, c := range cycleCases {
		n := cycleBench(c.name)
		label := c.label
		if c.skippable {
			label = skipLabel(r, n, label)
		}
		t, ok := r.median(n, nsPerOp)
		if !ok {
			rows = append(rows, Row{Section: cycleSection, Measurement: label, Result: "no result (" + n + ")", Status: NoData})
			continue
		}
		a, _ := r.median(n, "allocs/op")
		result := fmt.Sprintf("%s and %s allocations per cycle", ns(t), f0(a))
		if lo, hi, pct, ok := spread(r.values(n, nsPerOp)); ok {
			result += fmt.Sprintf(" (%s–%s over %d runs, ±%.0f %%)", ns(lo), ns(hi), r.runs(n, nsPerOp), pct)
		}
		rows = append(rows, Row{Section: cycleSection, Measurement: label, Result: result, Status: NoCheck})
	}
	rows = append(rows, interleavedRow(r))
	for _, c := range cycleRatios {
		rows = append(rows, cycleRatioRow(r, c))
	}
	return rows
}

// interleavedProfiles are the profiles of the interleaved sub-benchmark, with the
// words the document uses for them.
var interleavedProfiles = []struct{ profile, label string }{
	{"default", "default"}, {"skip-floor", "skip floor"}, {"archfilter", "ArchFilter"},
}

// interleavedRow is the mean time per cycle of each profile of the interleaved
// sub-benchmark (medians over the runs).
func interleavedRow(r *Results) Row {
	row := Row{Section: cycleSection, Status: NoCheck,
		Measurement: "images of every node architecture, a cycle of the default profile, the skip floor and ArchFilter in turn " +
			"(the first of each turn rotating): time per cycle"}
	var parts []string
	for _, p := range interleavedProfiles {
		v, ok := r.median(cycleBench(interleavedBench), p.profile+"-ns/cycle")
		if !ok {
			row.Result, row.Status = "no result ("+cycleBench(interleavedBench)+")", NoData
			return row
		}
		parts = append(parts, p.label+" "+ns(v))
	}
	row.Result = strings.Join(parts, ", ") + fmt.Sprintf(" (medians of %d runs; cycles in turn share the caches, so each is slower than on its own)",
		r.runs(cycleBench(interleavedBench), "default-ns/cycle"))
	return row
}

// cycleRatioRow is the ratio of the medians, with the ratios of the runs, paired in
// order: hack/bench runs the benchmark once per round, so the i-th values of two cases
// were measured side by side, as scheduler_perf's rounds are.
func cycleRatioRow(r *Results, c cycleRatio) Row {
	row := Row{Section: cycleSection, Measurement: c.label, Target: targetCell(c.target)}
	base, baseUnit := c.measure(c.base)
	subject, subjectUnit := c.measure(c.subject)
	tb, okb := r.median(base, baseUnit)
	ts, oks := r.median(subject, subjectUnit)
	if !okb || !oks || ts == 0 {
		row.Result, row.Status = "no result", NoData
		return row
	}
	ratio := tb / ts
	row.Result = f2(ratio)
	// Cycles per second are the inverse of times: divide base's time by subject's.
	judgeRatio(&row, ratio, pairedRatios(r.values(subject, subjectUnit), r.values(base, baseUnit)), c.target)
	if row.Status == Missed {
		row.Note = fmt.Sprintf("ratio %s against a target of %s.", f2(ratio), f2(c.target))
		var parts []string
		if c.interleaved {
			for _, side := range []string{c.base, c.subject} {
				name, unit := c.measure(side)
				if lo, hi, pct, ok := spread(r.values(name, unit)); ok {
					parts = append(parts, fmt.Sprintf("the %s profile's cycles in turn ranged %s–%s over %d runs (±%.0f %% around its median)",
						side, ns(lo), ns(hi), len(r.values(name, unit)), pct))
				}
			}
		} else {
			parts = spreads(r, []string{base, subject}, nsPerOp, "per cycle", ns)
		}
		if len(parts) > 0 {
			row.Note += " " + strings.Join(parts, "; ") + "."
		}
	}
	return row
}

// addCycleNote appends note to the missed rows of a scheduler_perf comparison: what
// the scheduling cycle, measured without scheduler_perf's other work, says of it.
func addCycleNote(rows []Row, note string) {
	if note == "" {
		return
	}
	for i := range rows {
		if rows[i].Status == Missed {
			rows[i].Note += " " + note
		}
	}
}

// cycleSpeed is the ratio of cycles per second of case subject to case base in run
// (the inverse ratio of their median times), if both were measured.
func cycleSpeed(run *Run, base, subject string) (float64, bool) {
	tb, okb := run.Results.median(cycleBench(base), nsPerOp)
	ts, oks := run.Results.median(cycleBench(subject), nsPerOp)
	if !okb || !oks || ts == 0 {
		return 0, false
	}
	return tb / ts, true
}

// everywhereCycleNote compares the cost of turning ArchFilter on with that of the
// smallest Filter plugin that checks the architecture, from the scheduling cycle.
func everywhereCycleNote(run *Run) string {
	minimal, ok1 := cycleSpeed(run, "everywhere/default", "everywhere/minimal")
	af, ok2 := cycleSpeed(run, "everywhere/minimal", "everywhere/archfilter")
	if !ok1 || !ok2 {
		return ""
	}
	note := fmt.Sprintf("In one scheduling cycle over 5 000 nodes without scheduler_perf's apiserver (run %s, section *%s*), "+
		"a minimal Filter plugin that allows every node by its label runs at %s of the default profile's cycles per second, "+
		"and ArchFilter at %s of the minimal plugin's", run.ID, cycleSection, f2(minimal), f2(af))
	// What ArchFilter costs these pods depends on the code the run measured, which
	// its cycles report; a run that does not report it is not explained.
	switch skipped, known := filterSkip(run.Results, cycleBench("everywhere/archfilter")); {
	case skipped:
		note += ": that run's cycles skipped ArchFilter's Filter (its PreFilter returns Skip when the pod's platforms " +
			"cover every platform of its node table, and Reserve checks the one chosen node), so what ArchFilter " +
			"adds is per pod (PreFilter, PreScore, Reserve), not per examined node, while the minimal plugin's cost " +
			"is one more Filter call on every examined node."
		floor, ok1 := cycleSpeed(run, "everywhere/default", "everywhere/skip-floor")
		above, ok2 := cycleSpeed(run, "everywhere/skip-floor", "everywhere/archfilter")
		if ok1 && ok2 {
			note += fmt.Sprintf(" A plugin that does nothing but return Skip from PreFilter runs at %s of the default "+
				"profile's cycles per second (the framework still calls its PreFilter and looks its name up in the skip set "+
				"for every examined node), and ArchFilter at %s of that floor.", f2(floor), f2(above))
		}
	case known:
		note += ": that run's cycles called ArchFilter's Filter on every examined node, so most of the cost is one more " +
			"Filter plugin called on every examined node, which no Filter plugin avoids."
	default:
		note += "."
	}
	return note
}

// s390xCycleNote says how much faster ArchFilter's cycle is for minority-architecture
// pods than node affinity's, when scheduler_perf's end-to-end ratio falls short.
func s390xCycleNote(run *Run) string {
	speed, ok := cycleSpeed(run, "s390x-affinity/default", "s390x/archfilter")
	if !ok {
		return ""
	}
	return fmt.Sprintf("One scheduling cycle is %s× faster with ArchFilter (run %s, section *%s*): "+
		"end to end, the rest of scheduler_perf's one process (binding, kube-apiserver, etcd, the pod creator, on the same two cores) "+
		"caps the ArchFilter side at about the pace of every other workload of the run.", f1(speed), run.ID, cycleSection)
}

// upstreamCycleNote says what ArchFilter costs the cycle of an upstream workload's
// pods (cases <kind>/default and <kind>/archfilter, over upstream's layout, in the
// words of what), when scheduler_perf's end-to-end ratio for that workload falls short.
func upstreamCycleNote(run *Run, kind, what string) string {
	base, subject := kind+"/default", kind+"/archfilter"
	speed, ok := cycleSpeed(run, base, subject)
	if !ok {
		return ""
	}
	note := fmt.Sprintf("In one scheduling cycle of %s over upstream's layout of 5 000 nodes, without scheduler_perf's "+
		"apiserver (run %s, section *%s*), ArchFilter runs at %s of the default profile's cycles per second", what, run.ID, cycleSection, f2(speed))
	if lo, hi, ok := roundRange(pairedRatios(run.Results.values(cycleBench(subject), nsPerOp),
		run.Results.values(cycleBench(base), nsPerOp))); ok {
		note += fmt.Sprintf(" (rounds %s–%s)", f2(lo), f2(hi))
	}
	return note + "."
}

// roundRange is the smallest and largest of the rounds' ratios, if there are two or more.
func roundRange(ratios []float64) (lo, hi float64, ok bool) {
	if len(ratios) < 2 {
		return 0, 0, false
	}
	return slices.Min(ratios), slices.Max(ratios), true
}

// profileShare matches the header of go tool pprof -top with -focus: "Showing nodes
// accounting for 0.27s, 0.83% of 32.36s total".
var profileShare = regexp.MustCompile(`Showing nodes accounting for (0|[0-9.]+(?:ms|s|min)), [0-9.]+% of ([0-9.]+(?:ms|s|min)) total`)

// profileDuration parses one of pprof's durations: "0", "250ms", "1.40s", "2min".
func profileDuration(v string) (float64, bool) {
	if v == "0" {
		return 0, true
	}
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"ms", 1e-3}, {"min", 60}, {"s", 1}} {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			f, err := strconv.ParseFloat(num, 64)
			return f * u.scale, err == nil
		}
	}
	return 0, false
}

// profiledCycles is the CPU time, in seconds, of the cycles timed in the profiled
// pass: the sum over its benchmark lines of iterations × cpu-ns/op.
func profiledCycles(log string) float64 {
	total := 0.0
	for _, line := range strings.Split(log, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		n, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			continue
		}
		for i := 2; i+1 < len(fields); i += 2 {
			if fields[i+1] == cpuPerOp {
				if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
					total += n * v / 1e9
				}
			}
		}
	}
	return total
}

// cycleProfileRows is the CPU that ArchFilter's extension points took in the
// profiled pass of the upstream workloads' cycles (hack/bench: spread/archfilter and
// preempt/archfilter under -cpuprofile): from the header of the focused table, against
// the CPU of the timed cycles (the pass's benchmark lines) and of the whole process.
// None when the run took no profile.
func cycleProfileRows(log, top string) []Row {
	if top == "" {
		return nil
	}
	row := Row{Section: cycleSection, Status: NoCheck,
		Measurement: "CPU profile of upstream TopologySpreading's and PreemptionBasic's cycles with ArchFilter " +
			"(one pass of both cases, 3 s each): ArchFilter's extension points (PreFilter, Filter, PreScore, Score, NormalizeScore)"}
	m := profileShare.FindStringSubmatch(top)
	if m == nil {
		row.Result, row.Status = "the profile's header was not understood", NoData
		return []Row{row}
	}
	own, ok1 := profileDuration(m[1])
	process, ok2 := profileDuration(m[2])
	if !ok1 || !ok2 || process <= 0 {
		row.Result, row.Status = "the profile's header was not understood", NoData
		return []Row{row}
	}
	row.Result = fmt.Sprintf("%s s of CPU", f2(own))
	if cycles := profiledCycles(log); cycles > 0 {
		row.Result += fmt.Sprintf(": %.2f %% of the %s s the timed cycles took", 100*own/cycles, f1(cycles))
	}
	row.Result += fmt.Sprintf(" (%.2f %% of the process's %s s, building the clusters included)", 100*own/process, f1(process))
	return []Row{row}
}

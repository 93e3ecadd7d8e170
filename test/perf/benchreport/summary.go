package benchreport

import (
	"fmt"
	"slices"
	"strings"
)

// Status is a summary row's verdict on its target.
type Status string

const (
	Met     Status = "met"
	Missed  Status = "**missed**"
	NoData  Status = "**no data**"
	NoCheck Status = "—" // the row has no target
)

// Row is one line of the summary table.
type Row struct {
	Section, Measurement, Result, Target string
	Status                               Status
	// Note explains a missed target with what the run itself shows.
	Note string
	// Run is the ID of the run the row's figures come from; empty when none measured them.
	Run string
}

func atLeast(v, target float64) Status {
	if v >= target {
		return Met
	}
	return Missed
}

// Summary builds the summary table's rows from one or more runs: each measurement,
// and for those with a target, whether it was met. The rows of a comparison come from
// one run, the run of the largest scale that measured both sides (pickPair); the
// scheduling cycle and the micro-benchmarks from the newest run that has them. Each
// row names its run.
func Summary(runs []*Run) []Row {
	var rows []Row
	rows = append(rows, throughputRows(runs)...)
	rows = append(rows, upstreamRows(runs)...)
	rows = append(rows, batchingRows(runs)...)
	rows = append(rows, coldCacheRows(runs)...)
	rows = append(rows, outageRows(runs)...)
	cycle := cycleRun(runs)
	rows = append(rows, fromRun(cycle, cycleRows(cycle.Results))...)
	rows = append(rows, fromRun(cycle, cycleProfileRows(cycle.CycleProfileLog, cycle.CycleProfileArchFilter))...)
	curve := curveRun(runs)
	rows = append(rows, fromRun(curve, curveRows(curve.Results))...)
	micro := microRun(runs)
	rows = append(rows, fromRun(micro, microRows(micro.Results))...)
	return rows
}

// side is one side of a throughput comparison.
type side struct {
	testCase, label string
}

// compare adds the rows of one same-run throughput comparison: each side's median
// SchedulingThroughput (with its bind rate), and the ratio of the medians with
// the ratios of the rounds and how confident they make the verdict.
func compare(run *Run, section string, base, subject side, target float64, ratioLabel string) []Row {
	r, workload := run.Results, run.Scale.Workload
	var rows []Row
	for _, p := range []side{base, subject} {
		name := perfName(p.testCase, workload)
		tp, ok := r.median(name, throughput)
		if !ok {
			rows = append(rows, Row{Section: section, Measurement: p.label, Result: "no result", Status: NoData})
			continue
		}
		br, _ := r.median(name, bindRate)
		rows = append(rows, Row{Section: section, Measurement: p.label,
			Result: fmt.Sprintf("%s pods/s (bind rate %s pods/s; %d runs)", f0(tp), f0(br), r.runs(name, throughput)), Status: NoCheck})
	}
	rows = append(rows, ratioRow(r, section, ratioLabel,
		perfName(base.testCase, workload), perfName(subject.testCase, workload), target, ""))
	return fromRun(run, rows)
}

// ratioRow compares the median SchedulingThroughput of benchmark s to that of b
// against target, with the per-round ratios and the sign test's confidence;
// detail (if any) is added to the result.
// A target of 0 is none: the row is for reference, with the range of the rounds.
func ratioRow(r *Results, section, label, b, s string, target float64, detail string) Row {
	row := Row{Section: section, Measurement: label, Target: targetCell(target)}
	tb, okb := r.median(b, throughput)
	ts, oks := r.median(s, throughput)
	if !okb || !oks || tb == 0 {
		row.Result, row.Status = "no result", NoData
		return row
	}
	ratio := ts / tb
	row.Result = f2(ratio)
	if bb, ok := r.median(b, bindRate); ok && bb > 0 {
		bs, _ := r.median(s, bindRate)
		row.Result += fmt.Sprintf(" (bind rates: %s)", f2(bs/bb))
	}
	if detail != "" {
		row.Result += "; " + detail
	}
	judgeRatio(&row, ratio, pairedRatios(r.values(b, throughput), r.values(s, throughput)), target)
	if row.Status == Missed {
		row.Note = throughputNote(r, b, s, ratio, target)
	}
	return row
}

// targetCell is the target column of a ratio row: "" (shown as a dash) for none.
func targetCell(target float64) string {
	if target <= 0 {
		return ""
	}
	return fmt.Sprintf("≥ %.2f", target)
}

// judgeRatio completes a ratio row: the rounds' ratios and, against a target, the
// sign test's verdict and the status; without a target (0), the rounds' range only.
func judgeRatio(row *Row, ratio float64, rounds []float64, target float64) {
	row.Status = NoCheck
	if target <= 0 {
		if rounds != nil {
			row.Result += fmt.Sprintf("; per round %s–%s", f2(slices.Min(rounds)), f2(slices.Max(rounds)))
		}
		return
	}
	if rounds != nil {
		row.Result += "; " + roundsVerdict(rounds, target)
	}
	row.Status = atLeast(ratio, target)
}

// throughputNote says what the run shows about a missed throughput ratio: the spread of
// the runs, and whether pod creation rather than the scheduler set the pace.
func throughputNote(r *Results, base, subject string, ratio, target float64) string {
	parts := spreads(r, []string{base, subject}, throughput, "pods/s", f0)
	for _, n := range []string{base, subject} {
		cr, ok1 := r.median(n, createRate)
		br, ok2 := r.median(n, bindRate)
		if ok1 && ok2 && cr > 0 && br >= 0.8*cr {
			parts = append(parts, fmt.Sprintf("in `%s` pods were bound at %s pods/s while they were created at %s pods/s: "+
				"the scheduler kept up with creation, so the comparison is capped by the pod creator sharing the two cores",
				strings.TrimPrefix(n, perfPrefix), f0(br), f0(cr)))
		}
	}
	note := fmt.Sprintf("ratio %s against a target of %s.", f2(ratio), f2(target))
	if len(parts) > 0 {
		note += " " + strings.Join(parts, "; ") + "."
	}
	return note
}

// spreads describes how unit varied over the runs of each named benchmark.
func spreads(r *Results, names []string, unit, unitLabel string, format func(float64) string) []string {
	var parts []string
	for _, n := range names {
		vs := r.values(n, unit)
		if lo, hi, pct, ok := spread(vs); ok {
			parts = append(parts, fmt.Sprintf("`%s` ranged %s–%s %s over %d runs (±%.0f %% around its median)",
				strings.TrimPrefix(n, perfPrefix), format(lo), format(hi), unitLabel, len(vs), pct))
		}
	}
	return parts
}

// mixedReferenceRatio is the multi-arch pods' ratio to the default profile: no target,
// because that profile places some of them where they cannot run.
const mixedReferenceRatio = "for reference, no target: ratio ArchFilter / default, which places some of these pods " +
	"on s390x nodes where they cannot run (the pairs below are the issue's)"

func throughputRows(runs []*Run) []Row {
	const mixed = "Throughput: mixed nodes, multi-arch pods"
	rows := compare(pickPair(runs, "MixedArch_Default", "MixedArch_ArchFilter"), mixed,
		side{"MixedArch_Default", "default profile"},
		side{"MixedArch_ArchFilter", "default + ArchFilter (warm cache)"},
		0, mixedReferenceRatio)
	// The reference variant is a ratio of its own, to the default of its run (which
	// may be another than the pair's above: BENCH_LABELS=-variant leaves it out).
	lastRun := pickPair(runs, "MixedArch_Default", "MixedArch_ArchFilterLast")
	r, workload := lastRun.Results, lastRun.Scale.Workload
	base, okBase := r.median(perfName("MixedArch_Default", workload), throughput)
	last := perfName("MixedArch_ArchFilterLast", workload)
	if tl, ok := r.median(last, throughput); ok && okBase && base > 0 {
		fp, _ := r.median(last, filterPhase)
		fd, _ := r.median(perfName("MixedArch_Default", workload), filterPhase)
		fa, _ := r.median(perfName("MixedArch_ArchFilter", workload), filterPhase)
		rows = append(rows, Row{Section: mixed,
			Measurement: "for comparison: ArchFilter under multiPoint only (last among the Filter plugins), ratio to default",
			Result: fmt.Sprintf("%s (%s pods/s; Filter phase per cycle: default %s ms, ArchFilter first %s ms, last %s ms)",
				f2(tl/base), f0(tl), f2(fd), f2(fa), f2(fp)), Status: NoCheck, Run: lastRun.ID})
	}
	rows = append(rows, compare(pickPair(runs, "MixedArch_NodeAffinity", "MixedArch_ArchFilter"),
		"Throughput: mixed nodes, multi-arch pods, against hand-written affinity",
		side{"MixedArch_NodeAffinity", "default profile, pods with required nodeAffinity kubernetes.io/arch In [amd64, arm64]"},
		side{"MixedArch_ArchFilter", "default + ArchFilter (warm cache), pods without affinity"},
		1.0, "ratio ArchFilter / nodeAffinity")...)
	everywhere := compare(pickPair(runs, "Everywhere_Default", "Everywhere_ArchFilter"),
		"Throughput: mixed nodes, images of every node architecture",
		side{"Everywhere_Default", "default profile"},
		side{"Everywhere_ArchFilter", "default + ArchFilter (warm cache; allows every node)"},
		0.98, "ratio ArchFilter / default: the cost of turning it on")
	addCycleNote(everywhere, everywhereCycleNote(cycleRun(runs)))
	rows = append(rows, everywhere...)
	const s390x = "Throughput: s390x-only pods"
	s390xRun := pickPair(runs, "S390xOnly_NodeAffinity", "S390xOnly_ArchFilter")
	s390xRows := compare(s390xRun, s390x,
		side{"S390xOnly_NodeAffinity", "in-tree required nodeAffinity, no ArchFilter"},
		side{"S390xOnly_ArchFilter", "ArchFilter (PreFilterResult node index)"},
		4, "speed-up ArchFilter / nodeAffinity")
	addCycleNote(s390xRows, s390xCycleNote(cycleRun(runs)))
	rows = append(rows, s390xRows...)
	r, workload = s390xRun.Results, s390xRun.Scale.Workload
	na, ok1 := r.median(perfName("S390xOnly_NodeAffinity", workload), filterPhase)
	af, ok2 := r.median(perfName("S390xOnly_ArchFilter", workload), filterPhase)
	if ok1 && ok2 && af > 0 {
		rows = append(rows, Row{Section: s390x, Measurement: "Filter phase per scheduling cycle (mean)",
			Result: fmt.Sprintf("nodeAffinity %s ms, ArchFilter %s ms: %s× shorter", f2(na), f2(af), f1(na/af)), Status: NoCheck, Run: s390xRun.ID})
	}
	return rows
}

func coldCacheRows(runs []*Run) []Row {
	const section = "Cold cache: 1 000 distinct images, registry +20 ms"
	run := pick(runs, measured("ColdCache_ArchFilter"))
	if run == nil {
		return []Row{{Section: section, Measurement: "ColdCache_ArchFilter", Result: "no result", Status: NoData}}
	}
	r, n := run.Results, perfName("ColdCache_ArchFilter", run.Scale.Workload)
	var rows []Row
	if v, ok := r.median(n, allBound); ok {
		rows = append(rows, Row{Section: section, Measurement: "time until all pods bound (first created → last bound)",
			Result: fmt.Sprintf("%s s (%d runs)", f2(v), r.runs(n, allBound)), Status: NoCheck})
	}
	if v, ok := r.median(n, coldReqs); ok {
		m, _ := r.median(n, coldManReqs)
		rows = append(rows, Row{Section: section, Measurement: "registry requests per image",
			Result: fmt.Sprintf("%s (%s manifest GET/HEAD + %s other: the /v2/ ping of each repository's session)", f2(v), f2(m), f2(v-m)), Status: NoCheck})
	}
	rows = append(rows, heldCyclesRow(r, section, n))
	return fromRun(run, rows)
}

// heldCyclesRow is the "held pods consume no scheduling cycles" check over names.
func heldCyclesRow(r *Results, section string, names ...string) Row {
	total, h, runs := 0.0, 0.0, 0
	for _, n := range names {
		if v, ok := r.sum(n, extra); ok {
			total += v
			runs += r.runs(n, extra)
		}
		if v, ok := r.sum(n, held); ok {
			h += v
		}
	}
	rw := Row{Section: section, Measurement: "scheduling cycles spent on held pods (attempts beyond one per pod)", Target: "0"}
	switch {
	case runs == 0:
		rw.Result, rw.Status = "no result", NoData
	case h == 0:
		rw.Result, rw.Status = "no pod was held: the check proves nothing", Missed
	default:
		rw.Result = fmt.Sprintf("%s over %d runs (%s pods held at PreEnqueue)", f0(total), runs, f0(h))
		if total == 0 {
			rw.Status = Met
		} else {
			rw.Status = Missed
			rw.Note = "scheduler_schedule_attempts_total counted more attempts than pods: some pods were attempted before they could be placed."
		}
	}
	return rw
}

// outageRun is the run whose registry-outage workloads the document shows: the largest
// scale's that has all three (every ratio is to the healthy registry), else one with
// the healthy registry at least; nil if none.
func outageRun(runs []*Run) *Run {
	has := func(prefixes ...string) func(*Run) bool {
		return func(run *Run) bool {
			for _, p := range prefixes {
				if !run.Results.has(perfName("RegistryOutage_ArchFilter", p+run.Scale.Workload)) {
					return false
				}
			}
			return true
		}
	}
	if run := pick(runs, has("Healthy_", "Down_", "Slow2s_")); run != nil {
		return run
	}
	return pick(runs, has("Healthy_"))
}

func outageRows(runs []*Run) []Row {
	const section = "Registry outage, half the pods cached"
	run := outageRun(runs)
	if run == nil {
		run = noRun()
	}
	r, workload := run.Results, run.Scale.Workload
	healthy := perfName("RegistryOutage_ArchFilter", "Healthy_"+workload)
	baseTime, ok1 := r.median(healthy, allBound)
	baseRate, ok2 := r.median(healthy, throughput)
	if !ok1 || !ok2 || baseTime <= 0 {
		return []Row{{Section: section, Measurement: "RegistryOutage_ArchFilter", Result: "no result", Status: NoData}}
	}
	rows := []Row{{Section: section, Measurement: "cached half, registry healthy (20 ms)",
		Result: fmt.Sprintf("all bound %s s after the first was created; while being bound: %s pods/s (%d runs)",
			f2(baseTime), f0(baseRate), r.runs(healthy, allBound)), Status: NoCheck}}
	names := []string{healthy}
	for _, c := range []struct{ prefix, label string }{
		{"Down_", "cached half, registry down (503): throughput ratio to healthy"},
		{"Slow2s_", "cached half, registry slow (2 s per request): throughput ratio to healthy"},
	} {
		n := perfName("RegistryOutage_ArchFilter", c.prefix+workload)
		names = append(names, n)
		t, ok := r.median(n, allBound)
		if !ok || t <= 0 {
			rows = append(rows, Row{Section: section, Measurement: c.label, Result: "no result", Target: "≥ 0.95", Status: NoData})
			continue
		}
		rate, _ := r.median(n, throughput)
		fo, _ := r.median(n, failOpen)
		to, _ := r.median(n, timeouts)
		ratio := baseTime / t
		rw := Row{Section: section, Measurement: c.label, Target: "≥ 0.95",
			Result: fmt.Sprintf("%s (all bound in %s s; while being bound: %s pods/s, %s of healthy; the other half: %s failed open, %s released by maxWait)",
				f2(ratio), f2(t), f0(rate), f2(rate/baseRate), f0(fo), f0(to)),
			Status: atLeast(ratio, 0.95)}
		if rw.Status == Missed {
			rw.Note = fmt.Sprintf("ratio %s against a target of 0.95: the cached half took %s s to be bound, against %s s with a healthy registry.",
				f2(ratio), f2(t), f2(baseTime)) + " " + strings.Join(spreads(r, []string{healthy, n}, allBound, "s", f2), "; ") + "."
		}
		rows = append(rows, rw)
	}
	rows = append(rows, heldCyclesRow(r, section, names...))
	return fromRun(run, rows)
}

// upstreamCases are scheduler_perf's own test cases, each run by the default
// profile (Upstream_<case>_Default) and with ArchFilter (Upstream_<case>_ArchFilter)
// at upstream's sizes (test/perf/config/performance-config.yaml).
var upstreamCases = []string{"SchedulingBasic", "SchedulingNodeAffinity", "SchedulingPodAffinity", "TopologySpreading", "PreemptionBasic"}

// upstreamCycleKinds are the upstream test cases test/perf/cycle also measures in one
// scheduling cycle: their case kind there, and the pods' description.
var upstreamCycleKinds = map[string]struct{ kind, what string }{
	"TopologySpreading": {"spread", "the same pods"},
	"PreemptionBasic":   {"preempt", "the same pods (Filter rejects every node, then DefaultPreemption)"},
}

// UpstreamThresholds are Kubernetes 1.37's scheduler_perf thresholds (pods/s: the
// SchedulingThroughput average upstream's CI requires of the default profile, on its
// machines) of the upstream workloads test/perf runs at those sizes, keyed
// "TestCase/Workload". test/perf's TestUpstreamWorkloadsAreUpstreams pins them to
// the configuration in the module cache.
var UpstreamThresholds = map[string]float64{
	"SchedulingBasic/5000Nodes_10000Pods":        680,
	"SchedulingNodeAffinity/5000Nodes_10000Pods": 540,
	"SchedulingPodAffinity/5000Nodes_5000Pods":   70,
	"TopologySpreading/5000Nodes_5000Pods":       460,
}

// upstreamTarget is the no-regression bar for upstream's workloads: turning
// ArchFilter on costs at most 5 % of their throughput.
const upstreamTarget = 0.95

// upstreamRun is the run whose upstream test case the document shows: the largest
// scale's that measured both profiles on one of its workloads (their sizes are
// upstream's, not the scale's Workload), else one that measured the default profile;
// nil if none.
func upstreamRun(runs []*Run, base, subject string) *Run {
	both := func(run *Run) bool {
		for _, w := range run.Results.workloadsOf(base) {
			if run.Results.has(perfName(subject, w)) {
				return true
			}
		}
		return false
	}
	if run := pick(runs, both); run != nil {
		return run
	}
	return pick(runs, func(run *Run) bool { return len(run.Results.workloadsOf(base)) > 0 })
}

// upstreamRows is the no-regression table: one row per upstream test case and
// workload found in the run chosen for the case.
func upstreamRows(runs []*Run) []Row {
	const section = "No regression: upstream scheduler_perf workloads, ArchFilter in the profile / not"
	var rows []Row
	for _, c := range upstreamCases {
		base, subject := "Upstream_"+c+"_Default", "Upstream_"+c+"_ArchFilter"
		run := upstreamRun(runs, base, subject)
		if run == nil {
			rows = append(rows, Row{Section: section, Measurement: c, Result: "no result", Target: fmt.Sprintf("≥ %.2f", upstreamTarget), Status: NoData})
			continue
		}
		r := run.Results
		for _, w := range r.workloadsOf(base) {
			b, s := perfName(base, w), perfName(subject, w)
			tb, _ := r.median(b, throughput)
			ts, _ := r.median(s, throughput)
			rw := ratioRow(r, section, c+" ("+w+")", b, s, upstreamTarget,
				fmt.Sprintf("%s against %s pods/s (%d runs)", f0(ts), f0(tb), r.runs(s, throughput)))
			rw.Run = run.ID
			if threshold, ok := UpstreamThresholds[c+"/"+w]; ok && tb > 0 {
				rw.Note += fmt.Sprintf(" Kubernetes 1.37's threshold for this workload, the default profile on upstream's machines: %s pods/s; "+
					"the default profile here: %s pods/s (%s of it).", f0(threshold), f0(tb), f2(tb/threshold))
			}
			if rw.Status == Missed {
				rw.Note += bindRateNote(r, b, s, upstreamTarget)
			}
			if k, measured := upstreamCycleKinds[c]; measured && rw.Status == Missed {
				if note := upstreamCycleNote(cycleRun(runs), k.kind, k.what); note != "" {
					rw.Note += " " + note
				}
			}
			rows = append(rows, rw)
		}
	}
	return rows
}

// bindRateNote adds to a missed throughput ratio what the bind rates say, when they
// meet the target the sample average missed: SchedulingThroughput averages
// one-second samples of pods bound, seconds without a bind included, while the bind
// rate is the pods over the time from the first bind to the last.
func bindRateNote(r *Results, base, subject string, target float64) string {
	bb, okb := r.median(base, bindRate)
	bs, oks := r.median(subject, bindRate)
	if !okb || !oks || bb <= 0 || bs/bb < target {
		return ""
	}
	note := fmt.Sprintf(" The bind rates (measured pods over the time from their first bind to their last) give %s", f2(bs/bb))
	if lo, hi, ok := roundRange(pairedRatios(r.values(base, bindRate), r.values(subject, bindRate))); ok {
		note += fmt.Sprintf(" (rounds %s–%s)", f2(lo), f2(hi))
	}
	note += fmt.Sprintf(": %s pods/s with ArchFilter against %s without", f0(bs), f0(bb))
	tb, tbok := r.values(base, throughput), len(r.values(base, throughput)) > 0
	ts, tsok := r.values(subject, throughput), len(r.values(subject, throughput)) > 0
	if tbok && tsok {
		note += fmt.Sprintf(", while SchedulingThroughput, which averages one-second samples including the seconds in which no pod "+
			"is bound, swung from %s to %s pods/s without ArchFilter and from %s to %s with it",
			f0(slices.Min(tb)), f0(slices.Max(tb)), f0(slices.Min(ts)), f0(slices.Max(ts)))
	}
	return note + "."
}

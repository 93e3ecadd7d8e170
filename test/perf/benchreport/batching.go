package benchreport

import "fmt"

// batchingSection is the summary section of the Batching_* workloads.
const batchingSection = "Opportunistic batching: upstream's batching workloads, ArchFilter in the profile / not"

// batchHintUsed is test/perf's observer's metric: scheduling cycles that took
// opportunistic batching's hint (scheduler_batch_attempts_total{result=hint_used}) per pod.
const batchHintUsed = "batch-hint-used/pod"

// batchingCases are the Batching_* test cases: each runs the default profile and
// ArchFilter's with batching on (Batching_<case>_Default, _ArchFilter) and the
// default profile with batching off (_Unbatched), at the sizes of
// test/perf/config/performance-config.yaml.
var batchingCases = []struct{ name, pods string }{
	{"HostPort", "pods with host port 80 (one per node)"},
	{"Saturation", "pods requesting 3 of a node's 4 CPUs (one per node)"},
}

// batchingHintShare is the least share of the default profile's batched cycles
// ArchFilter's profile must also batch: a plugin that turned batching off would
// batch none.
const batchingHintShare = 0.9

// batchingRows are, for each batching test case and workload of the run chosen for
// it: the throughput ratio of ArchFilter to the default profile (both batching), the
// cycles each batched, and for reference what batching is worth (default with
// batching on / off).
func batchingRows(runs []*Run) []Row {
	var rows []Row
	for _, c := range batchingCases {
		base := "Batching_" + c.name + "_Default"
		subject, unbatched := "Batching_"+c.name+"_ArchFilter", "Batching_"+c.name+"_Unbatched"
		run := upstreamRun(runs, base, subject)
		if run == nil {
			rows = append(rows, Row{Section: batchingSection, Measurement: c.name, Result: "no result",
				Target: targetCell(upstreamTarget), Status: NoData})
			continue
		}
		r := run.Results
		for _, w := range r.workloadsOf(base) {
			b, s, u := perfName(base, w), perfName(subject, w), perfName(unbatched, w)
			tb, _ := r.median(b, throughput)
			ts, _ := r.median(s, throughput)
			label := fmt.Sprintf("%s, %s (%s)", c.name, c.pods, w)
			rows = append(rows, fromRun(run, []Row{
				ratioRow(r, batchingSection, label+": throughput ratio ArchFilter / default, batching on", b, s, upstreamTarget,
					fmt.Sprintf("%s against %s pods/s (%d runs)", f0(ts), f0(tb), r.runs(s, throughput))),
				hintRow(r, label, b, s),
				ratioRow(r, batchingSection, label+": for reference, what batching is worth: default profile with batching on / off", u, b, 0, ""),
			})...)
		}
	}
	return rows
}

// hintRow says which share of its cycles each profile batched: ArchFilter's must
// batch at least batchingHintShare of what the default profile batches.
func hintRow(r *Results, label, base, subject string) Row {
	row := Row{Section: batchingSection, Measurement: label + ": cycles that took the batching hint, per pod",
		Target: fmt.Sprintf("ArchFilter ≥ %.1f × default", batchingHintShare)}
	hb, okb := r.median(base, batchHintUsed)
	hs, oks := r.median(subject, batchHintUsed)
	if !okb || !oks {
		row.Result, row.Status = "no result", NoData
		return row
	}
	row.Result = fmt.Sprintf("default %s, ArchFilter %s (medians of %d runs)", f2(hb), f2(hs), r.runs(subject, batchHintUsed))
	row.Status = Met
	if hb <= 0 || hs < batchingHintShare*hb {
		row.Status = Missed
		row.Note = fmt.Sprintf("ArchFilter's profile took the batching hint in %s of its cycles per pod, the default profile in %s: "+
			"a Filter or Score plugin that cannot sign pods turns batching off for the whole profile.", f2(hs), f2(hb))
		if hb <= 0 {
			row.Note = "the default profile took no batching hint: the run did not batch (is OpportunisticBatching on?), so the check proves nothing."
		}
	}
	return row
}

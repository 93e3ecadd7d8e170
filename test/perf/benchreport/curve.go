package benchreport

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// curveSection is the summary section of test/perf/cycle's BenchmarkSchedulingCycleNodes.
const curveSection = "Scheduling cycle against cluster size (SchedulePod, no apiserver)"

// curvePrefix starts the names of BenchmarkSchedulingCycleNodes' results:
// "BenchmarkSchedulingCycleNodes/nodes=<n>/<pods>/<profile>".
const curvePrefix = "BenchmarkSchedulingCycleNodes/nodes="

// cpuPerOp is the cycle benchmarks' CPU time of the whole process per cycle.
const cpuPerOp = "cpu-ns/op"

// curveBench is the benchmark of case c at n nodes.
func curveBench(n int, c string) string { return curvePrefix + strconv.Itoa(n) + "/" + c }

// curveCase is a case of BenchmarkSchedulingCycleNodes and what decides how many
// nodes its cycle examines.
type curveCase struct {
	name, label string
	// searched is the share of the cluster's nodes the cycle searches, in tenths:
	// 10, or the share a PreFilterResult narrows it to.
	searched int
	// feasible is the share of the searched nodes that pass the Filter plugins, in tenths.
	feasible int
	// skippable: the label ends in an open parenthesis, closed by skipLabel.
	skippable bool
}

// curveCases are BenchmarkSchedulingCycleNodes' cases, in the summary's order, over
// test/perf/cycle's node mix (60 % amd64, 30 % arm64, 10 % s390x, interleaved by index,
// so that any run of nodes has the mix's shares).
var curveCases = []curveCase{
	{"multiarch/default", "multi-arch pods, default profile (accepts the s390x nodes: reference)", 10, 10, false},
	{"multiarch/archfilter", "multi-arch pods, default + ArchFilter (rejects the s390x nodes)", 10, 9, false},
	{"multiarch-affinity/default", "multi-arch pods with required nodeAffinity In [amd64, arm64], default profile", 10, 9, false},
	{"everywhere/default", "images of every node architecture, default profile", 10, 10, false},
	{"everywhere/skip-floor", "images of every node architecture, default + a plugin whose PreFilter always returns Skip (the floor)", 10, 10, false},
	{"everywhere/archfilter", "images of every node architecture, default + ArchFilter (rejects no node", 10, 10, true},
	{"s390x/archfilter", "s390x-only pods, default + ArchFilter (PreFilterResult: the s390x nodes only)", 1, 10, false},
	{"s390x-affinity/default", "s390x-only pods with required nodeAffinity In [s390x], default profile", 10, 1, false},
}

// curveRatios are the same-run comparisons of the curve, at each node count.
var curveRatios = []struct{ label, base, subject string }{
	{"cycles/s ratio ArchFilter / default, multi-arch pods (the default rejects no node: reference)", "multiarch/default", "multiarch/archfilter"},
	{"cycles/s ratio ArchFilter / required nodeAffinity, multi-arch pods", "multiarch-affinity/default", "multiarch/archfilter"},
	{"cycles/s ratio ArchFilter / default, images of every architecture", "everywhere/default", "everywhere/archfilter"},
	{"cycles/s ratio skip floor / default, images of every architecture", "everywhere/default", "everywhere/skip-floor"},
	{"cycles/s ratio ArchFilter / nodeAffinity, s390x-only pods", "s390x-affinity/default", "s390x/archfilter"},
}

// Kubernetes' bounds on the feasible nodes a cycle looks for, as numFeasibleNodesToFind
// in k8s.io/kubernetes/pkg/scheduler/schedule_one.go sets them.
const (
	minFeasibleNodes           = 100
	minFeasibleNodesPercentage = 5
)

// feasibleNodesToFind is how many feasible nodes a cycle over n searched nodes looks
// for before it stops filtering, with percentageOfNodesToScore unset, by the rule of
// numFeasibleNodesToFind (schedule_one.go): all of them under 100 nodes; otherwise
// 50 % minus one point per 125 nodes, at least 5 %, and at least 100 nodes.
func feasibleNodesToFind(n int) int {
	if n < minFeasibleNodes {
		return n
	}
	pct := max(50-n/125, minFeasibleNodesPercentage)
	return max(n*pct/100, minFeasibleNodes)
}

// examined is about how many nodes a cycle of c runs the Filter plugins on in a
// cluster of n nodes (the Filter phase stops once it has found enough feasible
// nodes, or has examined every searched node), and how many it scores.
func (c curveCase) examined(n int) (examined, scored int) {
	searched := n * c.searched / 10
	want := feasibleNodesToFind(searched)
	feasible := searched * c.feasible / 10
	if want >= feasible {
		return searched, feasible
	}
	// The feasible nodes are spread evenly: finding want of them takes about
	// want / (feasible share) nodes, rounded up.
	return min(searched, (want*10+c.feasible-1)/c.feasible), want
}

// curveRun is the run the curve's rows come from: the newest that ran
// BenchmarkSchedulingCycleNodes (its ratios pair cases of that one run), or noRun.
func curveRun(runs []*Run) *Run {
	if run := newest(runs, func(run *Run) bool { return len(curveNodes(run.Results)) > 0 }); run != nil {
		return run
	}
	return noRun()
}

// curveNodes are the node counts of BenchmarkSchedulingCycleNodes in r, ascending.
func curveNodes(r *Results) []int { return countsAfter(r, curvePrefix, "") }

// countsAfter are the numbers that follow prefix in r's benchmark names (up to the
// next "/"), ascending and each once; with unit, only those of names that have it.
func countsAfter(r *Results, prefix, unit string) []int {
	var out []int
	for _, name := range r.names() {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if unit != "" {
			if _, ok := r.median(name, unit); !ok {
				continue
			}
		}
		field, _, _ := strings.Cut(rest, "/")
		if n, err := strconv.Atoi(field); err == nil && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// nodeCount writes n as the document's prose does, digits grouped by three: 15 000.
func nodeCount(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}

// curveRows are the curve's rows: each case's time per cycle at each node count and
// how it grows, then the same-run ratios at each node count.
func curveRows(r *Results) []Row {
	nodes := curveNodes(r)
	if len(nodes) == 0 {
		return append([]Row{{Section: curveSection, Measurement: "time per cycle against cluster size",
			Result: "no result (make bench BENCH_CURVE=1000,5000,15000)", Status: NoData}}, schedulerMemoryRows(r)...)
	}
	var rows []Row
	for _, c := range curveCases {
		rows = append(rows, curveCaseRow(r, c, nodes))
	}
	for _, c := range curveRatios {
		var parts []string
		for _, n := range nodes {
			tb, okb := r.median(curveBench(n, c.base), nsPerOp)
			ts, oks := r.median(curveBench(n, c.subject), nsPerOp)
			if !okb || !oks || ts == 0 {
				parts = append(parts, nodeCount(n)+" nodes: no result")
				continue
			}
			part := fmt.Sprintf("%s nodes: %s", nodeCount(n), f2(tb/ts))
			cb, okb := r.median(curveBench(n, c.base), cpuPerOp)
			cs, oks := r.median(curveBench(n, c.subject), cpuPerOp)
			if okb && oks && cs > 0 {
				part += fmt.Sprintf(" (CPU %s)", f2(cb/cs))
			}
			parts = append(parts, part)
		}
		result := strings.Join(parts, "; ")
		if k := r.runs(curveBench(nodes[0], c.subject), nsPerOp); k > 1 {
			result += fmt.Sprintf(" (medians of %d rounds)", k)
		}
		rows = append(rows, Row{Section: curveSection, Measurement: c.label, Result: result, Status: NoCheck})
	}
	return append(rows, schedulerMemoryRows(r)...)
}

// curveCaseRow is one case's times per cycle at each node count, its growth from the
// smallest cluster to the largest, and what the nodes the cycle examines predict.
func curveCaseRow(r *Results, c curveCase, nodes []int) Row {
	row := Row{Section: curveSection, Measurement: c.label, Status: NoCheck}
	if c.skippable {
		row.Measurement = skipLabel(r, curveBench(nodes[0], c.name), c.label)
	}
	var parts []string
	var measured []int
	for _, n := range nodes {
		name := curveBench(n, c.name)
		t, ok := r.median(name, nsPerOp)
		if !ok {
			parts = append(parts, nodeCount(n)+" nodes: no result")
			continue
		}
		measured = append(measured, n)
		part := fmt.Sprintf("%s nodes: %s", nodeCount(n), ns(t))
		if cpu, ok := r.median(name, cpuPerOp); ok {
			part += fmt.Sprintf(" (CPU %s)", ns(cpu))
		}
		a, _ := r.median(name, "allocs/op")
		ex, _ := c.examined(n)
		part += fmt.Sprintf(", %s allocations, about %s nodes examined", f0(a), nodeCount(ex))
		parts = append(parts, part)
	}
	if len(measured) == 0 {
		row.Result, row.Status = "no result ("+curveBench(nodes[0], c.name)+", …)", NoData
		return row
	}
	row.Result = strings.Join(parts, "; ")
	if len(measured) < 2 {
		return row
	}
	lo, hi := measured[0], measured[len(measured)-1]
	row.Result += ". " + growth(r, c, lo, hi)
	return row
}

// growth says how case c's cost grew from lo to hi nodes and whether that is linear
// in the nodes the cycle examines, in the cluster's nodes, or neither. It judges by
// the CPU time per cycle when the run has it (steadier on shared cores than ns/op).
func growth(r *Results, c curveCase, lo, hi int) string {
	unit, what := cpuPerOp, "CPU time"
	if _, ok := r.median(curveBench(lo, c.name), unit); !ok {
		unit, what = nsPerOp, "time"
	}
	tlo, _ := r.median(curveBench(lo, c.name), unit)
	thi, _ := r.median(curveBench(hi, c.name), unit)
	exLo, _ := c.examined(lo)
	exHi, _ := c.examined(hi)
	cluster := float64(hi) / float64(lo)
	ex := float64(exHi) / float64(exLo)
	if tlo <= 0 {
		return ""
	}
	g := thi / tlo
	s := fmt.Sprintf("From %s to %s nodes (×%s) its %s per cycle grew ×%s; the nodes it examines grow ×%s (%s → %s)",
		nodeCount(lo), nodeCount(hi), f1(cluster), what, f2(g), f2(ex), nodeCount(exLo), nodeCount(exHi))
	// Within a factor of 1.5 of a model's growth counts as following it: two cores
	// shared with other work move single figures by more than that factor's half.
	const slack = 1.5
	switch {
	case g <= ex/slack:
		s += ": less than the nodes examined, so a fixed cost per cycle still dominates"
	case g <= ex*slack && ex < cluster/slack:
		s += ": about linear in the nodes examined, so sublinear in the cluster's nodes"
	case g <= ex*slack:
		s += ": about linear in the nodes examined, which here are about linear in the cluster's nodes"
	case g <= cluster*slack:
		s += ": more than the nodes examined, up to linear in the cluster's nodes"
	default:
		s += ": more than linear in the cluster's nodes"
	}
	return s + "."
}

// Command report turns the output of archfilter's benchmarks (go test -bench) into
// the summary of docs/benchmarks.md, and checks bench-smoke's gates. hack/bench/bench.sh
// runs it; it reads only files and writes the document (or, with -smoke, a verdict).
//
//	report -scale small -micro micro.txt -perf perf.txt -machine machine.txt \
//	       -micro-benchstat micro.benchstat -perf-benchstat perf.benchstat -out docs/benchmarks.md
//	report -smoke -scale smoke -micro micro.txt -perf perf.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	var o options
	flag.StringVar(&o.scale, "scale", "small", "BENCH_SCALE of the run: smoke, small or full")
	flag.StringVar(&o.micro, "micro", "", "go test -bench output of the micro-benchmarks")
	flag.StringVar(&o.perf, "perf", "", "go test -bench output of BenchmarkPerfScheduling")
	flag.StringVar(&o.microStat, "micro-benchstat", "", "benchstat output of the micro-benchmarks")
	flag.StringVar(&o.perfStat, "perf-benchstat", "", "benchstat output of BenchmarkPerfScheduling")
	flag.StringVar(&o.machine, "machine", "", "machine description: one \"key<TAB>value\" per line")
	flag.StringVar(&o.out, "out", "", "write the document here (default: summary on stdout only)")
	flag.BoolVar(&o.smoke, "smoke", false, "check bench-smoke's gates instead of writing the document")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

type options struct {
	scale, micro, perf, microStat, perfStat, machine, out string
	smoke                                                 bool
}

// scales names each BENCH_SCALE's workload (see test/perf/config/performance-config.yaml).
var scales = map[string]struct{ workload, description string }{
	"smoke": {"50Nodes_100Pods", "50 nodes, 100 pods per workload (CI smoke)"},
	"small": {"500Nodes_2000Pods", "500 nodes, 2 000 pods per workload"},
	"full":  {"5000Nodes_10000Pods", "5 000 nodes, 10 000 pods per workload (the issue's figures)"},
}

func run(o options, stdout io.Writer) error {
	sc, ok := scales[o.scale]
	if !ok {
		return fmt.Errorf("unknown scale %q", o.scale)
	}
	res := results{}
	for _, f := range []string{o.micro, o.perf} {
		if f == "" {
			continue
		}
		if err := res.parseFile(f); err != nil {
			return err
		}
	}
	if o.smoke {
		return smoke(res, sc.workload, stdout)
	}
	rows := summary(res, sc.workload)
	table := markdownTable(rows)
	fmt.Fprintln(stdout, table)
	if o.out == "" {
		return nil
	}
	return os.WriteFile(o.out, []byte(document(o, sc.description, res, rows, table)), 0o644)
}

// results holds every value of every benchmark metric: name → unit → one value per run.
// Benchmarks that failed are under failedKey, with the message that followed.
type results map[string]map[string][]float64

// failedKey holds the names of failed benchmarks (as units, with no values).
const failedKey = "--- FAIL"

// failures lists the benchmarks that failed, with go test's message.
func (r results) failures() []string {
	var out []string
	for name := range r[failedKey] {
		// A parent fails with its sub-benchmark; name the sub-benchmark only.
		parent := false
		for other := range r[failedKey] {
			parent = parent || strings.HasPrefix(other, name+"/")
		}
		if !parent {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// parseFile reads benchmark result lines: "BenchmarkX/y-2  N  v unit  v unit …".
func (r results) parseFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	failed := ""
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "--- FAIL: Benchmark"); ok {
			failed = "Benchmark" + strings.TrimSpace(name)
			if r[failedKey] == nil {
				r[failedKey] = map[string][]float64{}
			}
			r[failedKey][failed] = nil
			continue
		}
		if failed != "" && strings.HasPrefix(line, "    ") && strings.Contains(line, ".go:") {
			// The message under a failed benchmark, e.g. "    bench_test.go:115: …".
			delete(r[failedKey], failed)
			r[failedKey][failed+": "+strings.TrimSpace(line)] = nil
			failed = ""
			continue
		}
		failed = ""
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		name := procSuffix.ReplaceAllString(fields[0], "")
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			if r[name] == nil {
				r[name] = map[string][]float64{}
			}
			r[name][fields[i+1]] = append(r[name][fields[i+1]], v)
		}
	}
	return sc.Err()
}

// median of a metric over the runs, and whether there was any value.
func (r results) median(name, unit string) (float64, bool) {
	vs := slices.Clone(r[name][unit])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, true
	}
	return vs[len(vs)/2], true
}

// runs is how many values a metric has.
func (r results) runs(name, unit string) int { return len(r[name][unit]) }

// sum of a metric over the runs.
func (r results) sum(name, unit string) (float64, bool) {
	vs := r[name][unit]
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s, len(vs) > 0
}

func perfName(testCase, workload string) string {
	return "BenchmarkPerfScheduling/" + testCase + "/" + workload
}

// Metrics of BenchmarkPerfScheduling (scheduler_perf's and test/perf's observer's).
const (
	throughput  = "SchedulingThroughput/Average"
	bindRate    = "measured-pods/s"
	createRate  = "created-pods/s"
	allBound    = "all-bound-s"
	extra       = "extra-attempts"
	held        = "held-pods"
	timeouts    = "released-timeout"
	failOpen    = "fail-open"
	filterPhase = "scheduler_framework_extension_point_duration_ms/Average"
)

type status string

const (
	met     status = "met"
	missed  status = "**missed**"
	noData  status = "**no data**"
	noCheck status = "—"
)

type row struct {
	section, measurement, result, target string
	status                               status
	// note explains a missed target with what the run itself shows.
	note string
}

func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// ns formats a duration in nanoseconds with three significant digits.
func ns(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + " ms"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + " µs"
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + " ns"
}

func atLeast(v, target float64) status {
	if v >= target {
		return met
	}
	return missed
}

// summary builds the table's rows from the results.
func summary(r results, workload string) []row {
	var rows []row
	rows = append(rows, throughputRows(r, workload)...)
	rows = append(rows, coldCacheRows(r, workload)...)
	rows = append(rows, outageRows(r, workload)...)
	rows = append(rows, microRows(r)...)
	return rows
}

// pair is one side of a throughput comparison.
type pair struct {
	testCase, label string
}

// compare adds the rows of one same-run throughput comparison: each side's median
// SchedulingThroughput (with its bind rate), and the ratio of the medians.
func compare(r results, workload, section string, base, subject pair, target float64, ratioLabel string) []row {
	b, s := perfName(base.testCase, workload), perfName(subject.testCase, workload)
	var rows []row
	for _, p := range []pair{base, subject} {
		name := perfName(p.testCase, workload)
		tp, ok := r.median(name, throughput)
		if !ok {
			rows = append(rows, row{section: section, measurement: p.label, result: "no result", target: "", status: noData})
			continue
		}
		br, _ := r.median(name, bindRate)
		rows = append(rows, row{section: section, measurement: p.label,
			result: fmt.Sprintf("%s pods/s (bind rate %s pods/s; %d runs)", f0(tp), f0(br), r.runs(name, throughput)), status: noCheck})
	}
	tb, okb := r.median(b, throughput)
	ts, oks := r.median(s, throughput)
	ratioRow := row{section: section, measurement: ratioLabel, target: fmt.Sprintf("≥ %.2f", target)}
	if !okb || !oks || tb == 0 {
		ratioRow.result, ratioRow.status = "no result", noData
		return append(rows, ratioRow)
	}
	ratio := ts / tb
	bb, _ := r.median(b, bindRate)
	bs, _ := r.median(s, bindRate)
	ratioRow.result = fmt.Sprintf("%s (bind rates: %s)", f2(ratio), f2(bs/bb))
	ratioRow.status = atLeast(ratio, target)
	if ratioRow.status == missed {
		ratioRow.note = throughputNote(r, b, s, ratio, target)
	}
	return append(rows, ratioRow)
}

// throughputNote says what the run shows about a missed throughput ratio: the spread of
// the runs, and whether pod creation rather than the scheduler set the pace.
func throughputNote(r results, base, subject string, ratio, target float64) string {
	parts := spreads(r, []string{base, subject}, throughput, "pods/s", f0)
	for _, n := range []string{base, subject} {
		cr, ok1 := r.median(n, createRate)
		br, ok2 := r.median(n, bindRate)
		if ok1 && ok2 && cr > 0 && br >= 0.8*cr {
			parts = append(parts, fmt.Sprintf("in `%s` pods were bound at %s pods/s while they were created at %s pods/s: "+
				"the scheduler kept up with creation, so the comparison is capped by the pod creator sharing the two cores",
				strings.TrimPrefix(n, "BenchmarkPerfScheduling/"), f0(br), f0(cr)))
		}
	}
	return fmt.Sprintf("ratio %s against a target of %s. %s.", f2(ratio), f2(target), strings.Join(parts, "; "))
}

// spreads describes how unit varied over the runs of each named benchmark.
func spreads(r results, names []string, unit, unitLabel string, format func(float64) string) []string {
	var parts []string
	for _, n := range names {
		vs := slices.Clone(r[n][unit])
		slices.Sort(vs)
		if len(vs) > 1 {
			spread := (vs[len(vs)-1] - vs[0]) / vs[len(vs)/2] * 100
			parts = append(parts, fmt.Sprintf("`%s` ranged %s–%s %s over %d runs (±%.0f %% around its median)",
				strings.TrimPrefix(n, "BenchmarkPerfScheduling/"), format(vs[0]), format(vs[len(vs)-1]), unitLabel, len(vs), spread/2))
		}
	}
	return parts
}

func throughputRows(r results, workload string) []row {
	const mixed = "Throughput: mixed nodes, multi-arch pods"
	rows := compare(r, workload, mixed,
		pair{"MixedArch_Default", "default profile"},
		pair{"MixedArch_ArchFilter", "default + ArchFilter (warm cache)"},
		0.98, "ratio ArchFilter / default")
	base, okBase := r.median(perfName("MixedArch_Default", workload), throughput)
	last := perfName("MixedArch_ArchFilterLast", workload)
	if tl, ok := r.median(last, throughput); ok && okBase && base > 0 {
		fp, _ := r.median(last, filterPhase)
		fd, _ := r.median(perfName("MixedArch_Default", workload), filterPhase)
		fa, _ := r.median(perfName("MixedArch_ArchFilter", workload), filterPhase)
		rows = append(rows, row{section: mixed,
			measurement: "for comparison: ArchFilter under multiPoint only (last among the Filter plugins), ratio to default",
			result: fmt.Sprintf("%s (%s pods/s; Filter phase per cycle: default %s ms, ArchFilter first %s ms, last %s ms)",
				f2(tl/base), f0(tl), f2(fd), f2(fa), f2(fp)), status: noCheck})
	}
	const s390x = "Throughput: s390x-only pods"
	rows = append(rows, compare(r, workload, s390x,
		pair{"S390xOnly_NodeAffinity", "in-tree required nodeAffinity, no ArchFilter"},
		pair{"S390xOnly_ArchFilter", "ArchFilter (PreFilterResult node index)"},
		1.5, "speed-up ArchFilter / nodeAffinity")...)
	na, ok1 := r.median(perfName("S390xOnly_NodeAffinity", workload), filterPhase)
	af, ok2 := r.median(perfName("S390xOnly_ArchFilter", workload), filterPhase)
	if ok1 && ok2 && af > 0 {
		rows = append(rows, row{section: s390x, measurement: "Filter phase per scheduling cycle (mean)",
			result: fmt.Sprintf("nodeAffinity %s ms, ArchFilter %s ms: %s× shorter", f2(na), f2(af), f1(na/af)), status: noCheck})
	}
	return rows
}

func coldCacheRows(r results, workload string) []row {
	const section = "Cold cache: 1 000 distinct images, registry +20 ms"
	n := perfName("ColdCache_ArchFilter", workload)
	if r[n] == nil {
		return []row{{section: section, measurement: "ColdCache_ArchFilter", result: "no result", status: noData}}
	}
	var rows []row
	if v, ok := r.median(n, allBound); ok {
		rows = append(rows, row{section: section, measurement: "time until all pods bound (first created → last bound)",
			result: fmt.Sprintf("%s s (%d runs)", f2(v), r.runs(n, allBound)), status: noCheck})
	}
	if v, ok := r.median(n, "cold-req/image"); ok {
		m, _ := r.median(n, "cold-manifest-req/image")
		rows = append(rows, row{section: section, measurement: "registry requests per image",
			result: fmt.Sprintf("%s (%s manifest GET/HEAD + %s other: the /v2/ ping of each repository's session)", f2(v), f2(m), f2(v-m)), status: noCheck})
	}
	rows = append(rows, heldCyclesRow(r, section, n))
	return rows
}

// heldCyclesRow is the "held pods consume no scheduling cycles" check over names.
func heldCyclesRow(r results, section string, names ...string) row {
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
	rw := row{section: section, measurement: "scheduling cycles spent on held pods (attempts beyond one per pod)", target: "0"}
	switch {
	case runs == 0:
		rw.result, rw.status = "no result", noData
	case h == 0:
		rw.result, rw.status = "no pod was held: the check proves nothing", missed
	default:
		rw.result = fmt.Sprintf("%s over %d runs (%s pods held at PreEnqueue)", f0(total), runs, f0(h))
		if total == 0 {
			rw.status = met
		} else {
			rw.status = missed
			rw.note = "scheduler_schedule_attempts_total counted more attempts than pods: some pods were attempted before they could be placed."
		}
	}
	return rw
}

func outageRows(r results, workload string) []row {
	const section = "Registry outage, half the pods cached"
	healthy := perfName("RegistryOutage_ArchFilter", "Healthy_"+workload)
	baseTime, ok1 := r.median(healthy, allBound)
	baseRate, ok2 := r.median(healthy, throughput)
	if !ok1 || !ok2 || baseTime <= 0 {
		return []row{{section: section, measurement: "RegistryOutage_ArchFilter", result: "no result", status: noData}}
	}
	rows := []row{{section: section, measurement: "cached half, registry healthy (20 ms)",
		result: fmt.Sprintf("all bound %s s after the first was created; while being bound: %s pods/s (%d runs)",
			f2(baseTime), f0(baseRate), r.runs(healthy, allBound)), status: noCheck}}
	names := []string{healthy}
	for _, c := range []struct{ prefix, label string }{
		{"Down_", "cached half, registry down (503): throughput ratio to healthy"},
		{"Slow2s_", "cached half, registry slow (2 s per request): throughput ratio to healthy"},
	} {
		n := perfName("RegistryOutage_ArchFilter", c.prefix+workload)
		names = append(names, n)
		t, ok := r.median(n, allBound)
		if !ok || t <= 0 {
			rows = append(rows, row{section: section, measurement: c.label, result: "no result", target: "≥ 0.95", status: noData})
			continue
		}
		rate, _ := r.median(n, throughput)
		fo, _ := r.median(n, failOpen)
		to, _ := r.median(n, timeouts)
		ratio := baseTime / t
		rw := row{section: section, measurement: c.label, target: "≥ 0.95",
			result: fmt.Sprintf("%s (all bound in %s s; while being bound: %s pods/s, %s of healthy; the other half: %s failed open, %s released by maxWait)",
				f2(ratio), f2(t), f0(rate), f2(rate/baseRate), f0(fo), f0(to)),
			status: atLeast(ratio, 0.95)}
		if rw.status == missed {
			rw.note = fmt.Sprintf("ratio %s against a target of 0.95: the cached half took %s s to be bound, against %s s with a healthy registry.",
				f2(ratio), f2(t), f2(baseTime)) + " " + strings.Join(spreads(r, []string{healthy, n}, allBound, "s", f2), "; ") + "."
		}
		rows = append(rows, rw)
	}
	rows = append(rows, heldCyclesRow(r, section, names...))
	return rows
}

// micro describes one micro-benchmark row.
type micro struct {
	name, label string
	zeroAllocs  bool // target: 0 allocs/op
}

func microRows(r results) []row {
	const section = "Micro-benchmarks (per call, median)"
	var rows []row
	for _, m := range []micro{
		{"BenchmarkFilter/accept", "ArchFilter Filter, node accepted", true},
		{"BenchmarkFilter/reject", "ArchFilter Filter, node rejected", false},
		{"BenchmarkNodeAffinityFilter/accept", "in-tree NodeAffinity Filter, accepted (reference)", false},
		{"BenchmarkNodeAffinityFilter/reject", "in-tree NodeAffinity Filter, rejected (reference)", false},
		{"BenchmarkFilterClusterScan/table", "ArchFilter Filter, each call another of 5 000 nodes (platform table)", false},
		{"BenchmarkFilterClusterScan/labels", "ArchFilter Filter, each call another of 5 000 nodes, read from labels (fallback)", false},
		{"BenchmarkFilterClusterScan/nodeaffinity", "in-tree NodeAffinity Filter, each call another of 5 000 nodes (reference)", false},
		{"BenchmarkPreFilterWarm/minority", "PreFilter, warm, minority platform (PreFilterResult)", false},
		{"BenchmarkPreFilterWarm/majority", "PreFilter, warm, majority platforms", false},
		{"BenchmarkPreFilterWarm/everywhere", "PreFilter, warm, runs on every platform", false},
		{"BenchmarkPreEnqueueWarm", "PreEnqueue, warm (3 images)", false},
		{"BenchmarkScore/preferred", "Score, preferred platform", false},
		{"BenchmarkScore/other", "Score, no preference matches", false},
		{"BenchmarkScore/normalize", "NormalizeScore, 6 nodes", false},
		{"BenchmarkLookupWarm", "resolver Lookup, warm, anonymous", true},
		{"BenchmarkLookupWarmWithCredentials", "resolver Lookup, warm, with credentials", true},
	} {
		t, ok := r.median(m.name, "ns/op")
		if !ok {
			rows = append(rows, row{section: section, measurement: m.label, result: "no result (" + m.name + ")", status: noData})
			continue
		}
		a, _ := r.median(m.name, "allocs/op")
		by, _ := r.median(m.name, "B/op")
		rw := row{section: section, measurement: m.label,
			result: fmt.Sprintf("%s/op, %s allocs/op, %s B/op", ns(t), f0(a), f0(by)), status: noCheck}
		if m.zeroAllocs {
			rw.target = "0 allocs/op"
			rw.status = met
			if a > 0 {
				rw.status = missed
				rw.note = m.name + " allocates: the hot path is supposed to read memory only."
			}
		}
		rows = append(rows, rw)
	}
	for _, kind := range []string{"tag", "digest"} {
		n := "BenchmarkCacheMemory/" + kind
		img, ok := r.median(n, "B/image")
		if !ok {
			rows = append(rows, row{section: section, measurement: "cache memory (" + kind + ")", result: "no result", status: noData})
			continue
		}
		entry, _ := r.median(n, "B/entry")
		rows = append(rows, row{section: section, measurement: "resolver cache memory, image by " + kind,
			result: fmt.Sprintf("%s B per image, %s B per cache entry (%s MiB for cache.maxEntries 100 000)",
				f0(img), f0(entry), f1(entry*100000/(1<<20))), status: noCheck})
	}
	for _, c := range []struct{ label, archFilter, nodeAffinity string }{
		{"Filter accept: NodeAffinity / ArchFilter", "BenchmarkFilter/accept", "BenchmarkNodeAffinityFilter/accept"},
		{"Filter on 5 000 nodes: NodeAffinity / ArchFilter", "BenchmarkFilterClusterScan/table", "BenchmarkFilterClusterScan/nodeaffinity"},
	} {
		fa, ok1 := r.median(c.archFilter, "ns/op")
		na, ok2 := r.median(c.nodeAffinity, "ns/op")
		if ok1 && ok2 && fa > 0 {
			rows = append(rows, row{section: section, measurement: c.label, result: f2(na/fa) + "×", status: noCheck})
		}
	}
	return rows
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func markdownTable(rows []row) string {
	var b strings.Builder
	b.WriteString("| measurement | result | target | status |\n|---|---|---|---|\n")
	section := ""
	for _, r := range rows {
		if r.section != section {
			section = r.section
			fmt.Fprintf(&b, "| **%s** | | | |\n", escape(section))
		}
		target := r.target
		if target == "" {
			target = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", escape(r.measurement), escape(r.result), escape(target), r.status)
	}
	return b.String()
}

// smoke checks bench-smoke's gates: only gross regressions, never wall-clock times.
func smoke(r results, workload string, w io.Writer) error {
	var failures []string
	check := func(ok bool, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if ok {
			fmt.Fprintln(w, "ok:  ", msg)
			return
		}
		fmt.Fprintln(w, "FAIL:", msg)
		failures = append(failures, msg)
	}
	a, ok := r.median("BenchmarkFilter/accept", "allocs/op")
	check(ok && a == 0, "ArchFilter Filter allocates nothing on the accept path (allocs/op: %v, found: %v)", a, ok)
	names := []string{}
	for name := range r {
		if strings.HasPrefix(name, "BenchmarkPerfScheduling/") && strings.HasSuffix(name, "/"+workload) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	check(len(names) > 0, "scheduler_perf workloads ran (%d)", len(names))
	for _, n := range names {
		e, ok := r.sum(n, extra)
		check(ok && e == 0, "%s: no scheduling attempts beyond one per pod (extra: %v)", strings.TrimPrefix(n, "BenchmarkPerfScheduling/"), e)
	}
	cold := perfName("ColdCache_ArchFilter", workload)
	h, _ := r.sum(cold, held)
	fo, _ := r.sum(cold, failOpen)
	check(h > 0, "ColdCache_ArchFilter held its pods at PreEnqueue (held: %v), so the check above means something", h)
	check(fo == 0, "ColdCache_ArchFilter resolved every image (failed open: %v)", fo)
	if len(failures) > 0 {
		return fmt.Errorf("%d smoke check(s) failed", len(failures))
	}
	return nil
}

func readOptional(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return strings.TrimRight(string(b), "\n")
}

func document(o options, scaleDescription string, r results, rows []row, table string) string {
	machine := [][2]string{}
	for _, line := range strings.Split(readOptional(o.machine), "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if ok {
			machine = append(machine, [2]string{k, v})
		}
	}
	get := func(key string) string {
		for _, kv := range machine {
			if kv[0] == key {
				return kv[1]
			}
		}
		return "?"
	}
	var b strings.Builder
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("<!-- Generated by `make bench` (hack/bench/bench.sh, hack/bench/report). Do not edit: run it again. -->\n\n")
	fmt.Fprintf(&b, "Measured on %s with `BENCH_SCALE=%s`: %s. Every figure below comes from that one run; "+
		"ratios compare workloads of the same invocation. What is measured and how: [Method](#method).\n\n", get("date"), o.scale, scaleDescription)
	b.WriteString("## Machine\n\n| | |\n|---|---|\n")
	for _, kv := range machine {
		fmt.Fprintf(&b, "| %s | %s |\n", escape(kv[0]), escape(kv[1]))
	}
	b.WriteString("\n## Summary\n\n")
	b.WriteString("Throughput is scheduler_perf's `SchedulingThroughput` (the mean of its one-second samples of pods bound), " +
		"the median over the runs; the bind rate beside it is the same pods divided by the time from their first to their last bind. " +
		"Micro-benchmarks are medians of `go test -bench -benchmem` runs.\n\n")
	b.WriteString(table)
	var notes []string
	for _, rw := range rows {
		if rw.note != "" {
			notes = append(notes, fmt.Sprintf("- **%s — %s**: %s", rw.section, rw.measurement, rw.note))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n### Targets missed in this run\n\n")
		b.WriteString(strings.Join(notes, "\n"))
		b.WriteString("\n")
	}
	if failed := r.failures(); len(failed) > 0 {
		b.WriteString("\n### Benchmarks that failed in this run\n\nRows built from them use the runs that completed, or say *no result*; the raw log is kept under `.cache/bench/`.\n\n")
		for _, f := range failed {
			fmt.Fprintf(&b, "- `%s`\n", f)
		}
	}
	b.WriteString(method)
	b.WriteString("\n## Raw benchstat output\n\n### Micro-benchmarks\n\n```\n")
	b.WriteString(readOptional(o.microStat))
	b.WriteString("\n```\n\n### scheduler_perf workloads (test/perf)\n\n```\n")
	b.WriteString(readOptional(o.perfStat))
	b.WriteString("\n```\n")
	return b.String()
}

// method is the part of the document that does not change between runs.
const method = `
## Method

**Throughput** runs kube-scheduler's own benchmark harness,
` + "`k8s.io/kubernetes/test/integration/scheduler_perf`" + ` (` + "`RunBenchmarkPerfScheduling`" + ` with ArchFilter in
the out-of-tree registry and a scheduler configuration per test case), from
[test/perf](../test/perf): every workload of
[performance-config.yaml](../test/perf/config/performance-config.yaml) gets a fresh etcd,
kube-apiserver and scheduler in one process, and all of them run in one ` + "`go test`" + ` invocation,
all workloads once per round, ` + "`BENCH_ROUNDS`" + ` rounds in turn, so that the two sides of every ratio
share the machine's state. Nodes are 60 % linux/amd64, 30 % linux/arm64 and 10 % linux/s390x, interleaved.
Images live in in-memory registries (` + "`internal/registrytest`" + `) served over HTTPS on loopback, each
request delayed 20 ms. The ArchFilter profile is the default profile plus ArchFilter with the
plugins and args of ` + "`manifests/scheduler-config/default-scheduler.yaml`" + ` (a test keeps them equal):
ArchFilter under ` + "`multiPoint`" + ` and under ` + "`filter`" + `, which makes it the first Filter plugin;
16 workers, maxWait 30s.

- **Mixed nodes, multi-arch pods**: each pod's image is an index for linux/amd64 and
  linux/arm64 (the common multi-arch image), so ArchFilter does real work: PreFilter computes
  the set (90 % of the nodes, no PreFilterResult) and Filter rejects the s390x nodes.
  *Warm cache* means a warm-up pod with the same image was scheduled first, so the image was
  resolved through the registry: the measured pods take the production steady-state path
  (PreEnqueue's resolver Lookup per image, PreFilter from the cached tag and digest entries).
  The ` + "`archfilter.io/platforms`" + ` annotation would skip the resolver entirely and measure less
  than a real cluster runs. The default profile runs the same warm-up pod for symmetry.
  Filter reads each node's platform from a table keyed by the node object, fed by the node
  informer; reading the labels of every node instead cost about as much as all default Filter
  plugins together at 5 000 nodes (the micro-benchmark *each call another of 5 000 nodes* shows
  why: a node's label map is rarely in the CPU cache). A third profile enables ArchFilter under
  ` + "`multiPoint`" + ` only, where it runs last among the Filter plugins, to show what that place costs:
  the wrong-platform nodes then pass through every default Filter plugin before being rejected.
- **s390x-only pods**: ArchFilter narrows each cycle to the s390x nodes through its
  informer-fed index (a PreFilterResult: 10 % of the nodes); the in-tree alternative is a
  required node affinity on ` + "`kubernetes.io/arch`" + `, which the default profile checks node by node.
- **Cold cache**: 1 000 distinct images (one repository each), never seen; pods are held at
  PreEnqueue while the workers resolve them. *Time until all pods bound* runs from the first
  pod's creation to the last bind; *requests per image* divides the requests the registry
  answered during the workload by the distinct images of its pods; *cycles spent on held pods*
  is ` + "`scheduler_schedule_attempts_total`" + ` (all results) minus the pods, read when the last pod
  is bound. ArchFilter's own ` + "`archfilter_pods_held_total`" + ` shows the pods were held.
- **Registry outage**: 100 images are resolved by warm-up pods; then half the pods, whose
  images are on a second registry, are created, followed by the other half with the cached
  images, whose throughput is measured. The second registry is healthy (20 ms), down (503 to
  every request: the circuit breaker opens and failurePolicy Ignore lets those pods through
  unconstrained) or slow (2 s per request: at most 8 concurrent requests per registry, so most
  pods are released by maxWait after 30 s). In the healthy run the other half resolves in
  tens of milliseconds and competes with the cached half for scheduling cycles; in the outage
  runs it is held or fails open, so a ratio above 1 means held pods stayed out of the way, and
  a ratio well below 1 would mean an outage slows down pods that have nothing to do with it.
  The cached half's throughput is its pods divided by the time from the first one's creation
  to the last one's bind, so the ratio to healthy is the inverse ratio of those times.
  scheduler_perf's ` + "`SchedulingThroughput`" + ` (shown as *while being bound*) is not used for the
  target here: it averages one-second samples from the first bind on, and in the healthy run
  the cached half's first bind waits, about 15 s at full scale, until the other half is
  scheduled, after which its pods, all created by then, are bound in a burst with no pod
  creation competing; in the outage runs they are bound as they are created. The two sample
  averages therefore measure different situations, while the time until the half is bound is
  what an outage could worsen for pods that have nothing to do with it.

**Micro-benchmarks** are the plugin's and the resolver's ` + "`go test -bench`" + ` benchmarks
(` + "`pkg/plugins/archfilter`" + `, ` + "`pkg/resolver`" + `) with ` + "`-benchmem`" + `: Filter on the accept and reject paths
next to the in-tree NodeAffinity Filter on the same nodes, PreFilter and PreEnqueue with a warm
cache, Score, the resolver's warm Lookup, and the resolver cache's memory, measured as the live
heap (after a GC) before and after storing 10 000 answers the way a resolution stores them.

**Caveats.** The machine has two cores shared with other work. scheduler_perf runs etcd, the
apiserver, the pod creator and the scheduler in one process on those cores, so a faster
scheduler is partly hidden behind pod creation (compare *bind rate* with *created-pods/s* in
the raw output) and single runs vary by ±10–20 %: read ratios as medians over the runs, with
the spread shown in the raw output. ` + "`make bench BENCH_SCALE=full`" + ` runs the issue's 5 000 nodes and
10 000 pods, where the scheduler rather than pod creation sets the pace.

` + "`make bench-smoke`" + ` (CI) fails only on gross regressions: Filter allocating on the accept path, or
held pods consuming scheduling cycles (in 50-node workloads). It never checks a time.
`

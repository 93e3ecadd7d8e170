// Package benchreport reads the output of archfilter's benchmarks (go test -bench:
// the micro-benchmarks and test/perf's scheduler_perf workloads) and turns it into
// docs/benchmarks.md's summary and bench-smoke's verdicts. It reads and writes no
// files: test/perf/report does that.
package benchreport

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Results holds every value of every benchmark metric, one per run, and the
// benchmarks that failed.
type Results struct {
	// metrics is benchmark name (without the -GOMAXPROCS suffix) → unit → values.
	metrics map[string]map[string][]float64
	// failed holds failed benchmarks: "BenchmarkX/y", or "BenchmarkX/y: file_test.go:N: …"
	// when go test printed a message under it.
	failed map[string]bool
}

// NewResults returns empty results, ready for Parse.
func NewResults() *Results {
	return &Results{metrics: map[string]map[string][]float64{}, failed: map[string]bool{}}
}

// maxLine is the longest line Parse reads: scheduler_perf's result lines carry
// dozens of metrics.
const maxLine = 1 << 20

var procSuffix = regexp.MustCompile(`-\d+$`)

// Parse adds the results in go test -bench output: result lines
// ("BenchmarkX/y-2  N  v unit  v unit …") and failures ("--- FAIL: BenchmarkX/y",
// with the message go test prints under it). Every other line is skipped, and so is
// a result line that does not have that shape; a value that is not a number ends
// its line.
func (r *Results) Parse(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, maxLine), maxLine)
	failed := ""
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "--- FAIL: Benchmark"); ok {
			failed = "Benchmark" + strings.TrimSpace(name)
			r.failed[failed] = true
			continue
		}
		if failed != "" && strings.HasPrefix(line, "    ") && strings.Contains(line, ".go:") {
			// The message under a failed benchmark, e.g. "    bench_test.go:115: …".
			delete(r.failed, failed)
			r.failed[failed+": "+strings.TrimSpace(line)] = true
			failed = ""
			continue
		}
		failed = ""
		r.parseResult(line)
	}
	return sc.Err()
}

// parseResult adds the values of one result line, if line is one.
func (r *Results) parseResult(line string) {
	fields := strings.Fields(line)
	if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
		return
	}
	if _, err := strconv.Atoi(fields[1]); err != nil {
		return
	}
	name := procSuffix.ReplaceAllString(fields[0], "")
	for i := 2; i+1 < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return
		}
		if r.metrics[name] == nil {
			r.metrics[name] = map[string][]float64{}
		}
		r.metrics[name][fields[i+1]] = append(r.metrics[name][fields[i+1]], v)
	}
}

// Failures lists the benchmarks that failed, with go test's message where it printed
// one. A parent fails with its sub-benchmark; only the sub-benchmark is named.
func (r *Results) Failures() []string {
	var out []string
	for name := range r.failed {
		parent := false
		for other := range r.failed {
			parent = parent || strings.HasPrefix(other, name+"/")
		}
		if !parent {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// has says whether the benchmark reported any metric.
func (r *Results) has(name string) bool { return r.metrics[name] != nil }

// hasMicro says whether any micro-benchmark (anything but a scheduler_perf workload)
// reported a metric.
func (r *Results) hasMicro() bool {
	for name := range r.metrics {
		if !strings.HasPrefix(name, perfPrefix) {
			return true
		}
	}
	return false
}

// values of a metric, one per run, in the order they were read.
func (r *Results) values(name, unit string) []float64 { return r.metrics[name][unit] }

// names lists the benchmarks that reported a metric, sorted.
func (r *Results) names() []string {
	out := make([]string, 0, len(r.metrics))
	for name := range r.metrics {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// workloadsOf lists the workloads of a scheduler_perf test case found in the
// results, sorted.
func (r *Results) workloadsOf(testCase string) []string {
	var out []string
	for _, n := range r.names() {
		if w, ok := strings.CutPrefix(n, perfName(testCase, "")); ok && w != "" {
			out = append(out, w)
		}
	}
	return out
}

// median of a metric over the runs, and whether there was any value.
func (r *Results) median(name, unit string) (float64, bool) { return median(r.values(name, unit)) }

// sum of a metric over the runs, and whether there was any value.
func (r *Results) sum(name, unit string) (float64, bool) { return sum(r.values(name, unit)) }

// runs is how many values a metric has.
func (r *Results) runs(name, unit string) int { return len(r.values(name, unit)) }

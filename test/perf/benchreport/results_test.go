package benchreport

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Lines as go test -bench printed them in a bench-smoke run (perf lines cut short:
// scheduler_perf's carry some forty metrics).
const (
	realHeader = "goos: linux\ngoarch: amd64\npkg: github.com/archfilter/archfilter/pkg/plugins/archfilter\ncpu: AMD EPYC\n"
	realAccept = "BenchmarkFilter/accept-2         \t 9227835\t       108.7 ns/op\t       0 B/op\t       0 allocs/op"
	realReject = "BenchmarkFilter/reject-2         \t 6196050\t       222.3 ns/op\t      80 B/op\t       2 allocs/op"
	realTrail  = "PASS\nok  \tgithub.com/archfilter/archfilter/pkg/plugins/archfilter\t2.620s\n"
	realPerf   = "BenchmarkPerfScheduling/ColdCache_ArchFilter/50Nodes_100Pods-2               \t       1\t" +
		"         1.179 SchedulingDuration/Duration\t         0.9038 all-bound-s\t         0 extra-attempts\t       100.0 held-pods"
	coldSmoke = "BenchmarkPerfScheduling/ColdCache_ArchFilter/50Nodes_100Pods"
)

func TestParse(t *testing.T) {
	type metrics = map[string]map[string][]float64
	tests := []struct {
		name         string
		inputs       []string // one Parse call each
		want         metrics
		wantFailures []string
	}{
		{
			name:   "micro-benchmark output",
			inputs: []string{realHeader + realAccept + "\n" + realReject + "\n" + realTrail},
			want: metrics{
				"BenchmarkFilter/accept": {"ns/op": {108.7}, "B/op": {0}, "allocs/op": {0}},
				"BenchmarkFilter/reject": {"ns/op": {222.3}, "B/op": {80}, "allocs/op": {2}},
			},
		},
		{
			name:   "scheduler_perf workload with observer metrics",
			inputs: []string{"goos: linux\npkg: github.com/archfilter/archfilter/test/perf\n" + realPerf + "\n"},
			want: metrics{coldSmoke: {
				"SchedulingDuration/Duration": {1.179}, "all-bound-s": {0.9038}, "extra-attempts": {0}, "held-pods": {100},
			}},
		},
		{
			name:   "runs add up, within an input and across inputs",
			inputs: []string{realAccept + "\n" + realAccept + "\n", strings.Replace(realAccept, "108.7", "99", 1)},
			want:   metrics{"BenchmarkFilter/accept": {"ns/op": {108.7, 108.7, 99}, "B/op": {0, 0, 0}, "allocs/op": {0, 0, 0}}},
		},
		{
			name:   "GOMAXPROCS=1: no suffix to strip",
			inputs: []string{"BenchmarkLookupWarm \t 100 \t 42 ns/op"},
			want:   metrics{"BenchmarkLookupWarm": {"ns/op": {42}}},
		},
		{
			name: "malformed result lines are skipped",
			inputs: []string{strings.Join([]string{
				"BenchmarkFilter/accept-2 \t abc \t 108.7 ns/op",  // iterations not a number
				"BenchmarkFilter/accept-2 \t 9227835 \t 108.7",    // a value without a unit
				"BenchmarkFilter/accept-2",                        // name only
				"Benchmark",                                       // not even a name
				"    bench_test.go:12: BenchmarkFilter 1 2 ns/op", // a log line naming a benchmark
				"Filter 1 2 ns/op 3 B/op",                         // not a benchmark
				"",
			}, "\n")},
			want: metrics{},
		},
		{
			name: "a value that is not a number ends its line",
			inputs: []string{
				"BenchmarkFilter/accept-2 \t 10 \t 108.7 ns/op \t n/a B/op \t 0 allocs/op\n" +
					"BenchmarkFilter/reject-2 \t 10 \t 222.3 ns/op \t 80 B/op \t 2\n",
			},
			want: metrics{
				"BenchmarkFilter/accept": {"ns/op": {108.7}},
				"BenchmarkFilter/reject": {"ns/op": {222.3}, "B/op": {80}},
			},
		},
		{
			name: "failed sub-benchmark with go test's message, and its parent",
			inputs: []string{strings.Join([]string{
				"--- FAIL: BenchmarkPerfScheduling/ColdCache_ArchFilter/50Nodes_100Pods",
				"    scheduler_perf.go:1180: error waiting for pods: context deadline exceeded",
				"--- FAIL: BenchmarkPerfScheduling",
				"FAIL",
			}, "\n")},
			want: metrics{},
			wantFailures: []string{
				"BenchmarkPerfScheduling/ColdCache_ArchFilter/50Nodes_100Pods: scheduler_perf.go:1180: error waiting for pods: context deadline exceeded",
			},
		},
		{
			name: "failure without a message; the next result line still counts",
			inputs: []string{strings.Join([]string{
				"--- FAIL: BenchmarkCacheMemory/digest",
				realAccept,
				"    bench_test.go:115: too late to be the message",
			}, "\n")},
			want:         metrics{"BenchmarkFilter/accept": {"ns/op": {108.7}, "B/op": {0}, "allocs/op": {0}}},
			wantFailures: []string{"BenchmarkCacheMemory/digest"},
		},
		{
			name: "an indented line that names no source file is not the message",
			inputs: []string{strings.Join([]string{
				"--- FAIL: BenchmarkLookupWarm",
				"    the registry went away",
			}, "\n")},
			want:         metrics{},
			wantFailures: []string{"BenchmarkLookupWarm"},
		},
		{
			name: "failures of two inputs, sorted",
			inputs: []string{
				"--- FAIL: BenchmarkScore/other\n    score_test.go:9: boom\n",
				"--- FAIL: BenchmarkFilter/reject\n",
			},
			want:         metrics{},
			wantFailures: []string{"BenchmarkFilter/reject", "BenchmarkScore/other: score_test.go:9: boom"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewResults()
			for _, in := range tc.inputs {
				if err := r.Parse(strings.NewReader(in)); err != nil {
					t.Fatalf("Parse: %v", err)
				}
			}
			if diff := cmp.Diff(tc.want, r.metrics); diff != "" {
				t.Errorf("metrics (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFailures, r.Failures()); diff != "" {
				t.Errorf("Failures() (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestParseLineTooLong(t *testing.T) {
	r := NewResults()
	in := realAccept + "\n" + "BenchmarkX-2 1 " + strings.Repeat("1 u ", maxLine/4) + "\n"
	if err := r.Parse(strings.NewReader(in)); err == nil {
		t.Error("Parse of a line longer than maxLine: no error")
	}
}

func TestResultsAggregates(t *testing.T) {
	r := NewResults()
	in := "BenchmarkX-2 1 3 u\nBenchmarkX-2 1 1 u\nBenchmarkX-2 1 2 u\nBenchmarkX-2 1 10 u\n"
	if err := r.Parse(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	type got struct {
		Median, Sum    float64
		OKMed, OKSum   bool
		Runs           int
		Has, HasOthers bool
	}
	m, okm := r.median("BenchmarkX", "u")
	s, oks := r.sum("BenchmarkX", "u")
	want := got{Median: 2.5, Sum: 16, OKMed: true, OKSum: true, Runs: 4, Has: true}
	g := got{Median: m, Sum: s, OKMed: okm, OKSum: oks, Runs: r.runs("BenchmarkX", "u"), Has: r.has("BenchmarkX"), HasOthers: r.has("BenchmarkY")}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{3, 1, 2, 10}, r.values("BenchmarkX", "u")); diff != "" {
		t.Errorf("median or sum reordered the values (-want,+got):\n%s", diff)
	}
}

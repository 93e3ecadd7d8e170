package benchreport

import "fmt"

// Scale is what one BENCH_SCALE runs.
type Scale struct {
	// Name is the BENCH_SCALE: smoke, small or full.
	Name string
	// Workload is the scheduler_perf workload every test case runs at this scale
	// (see test/perf/config/performance-config.yaml).
	Workload string
	// Description says its size in words, for the document.
	Description string
}

var scales = []Scale{
	{"smoke", "50Nodes_100Pods", "50 nodes, 100 pods per workload (CI smoke)"},
	{"small", "500Nodes_2000Pods", "500 nodes, 2 000 pods per workload"},
	{"full", "5000Nodes_10000Pods", "5 000 nodes, 10 000 pods per workload (the issue's figures)"},
}

// LookupScale returns the BENCH_SCALE called name.
func LookupScale(name string) (Scale, error) {
	for _, s := range scales {
		if s.Name == name {
			return s, nil
		}
	}
	return Scale{}, fmt.Errorf("unknown scale %q", name)
}

// rank orders scales by size: smoke, small, full. An unknown scale ranks below them all.
func (s Scale) rank() int {
	for i, known := range scales {
		if known.Name == s.Name {
			return i
		}
	}
	return -1
}

const perfPrefix = "BenchmarkPerfScheduling/"

// perfName is the benchmark name of one scheduler_perf test case's workload.
func perfName(testCase, workload string) string {
	return perfPrefix + testCase + "/" + workload
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
	coldReqs    = "cold-req/image"
	coldManReqs = "cold-manifest-req/image"
)

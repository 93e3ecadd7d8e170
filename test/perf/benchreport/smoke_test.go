package benchreport

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const smokeWorkload = "50Nodes_100Pods"

func TestSmokeChecks(t *testing.T) {
	mixed := perfName("MixedArch_ArchFilter", smokeWorkload)
	cold := perfName("ColdCache_ArchFilter", smokeWorkload)
	accept := result("BenchmarkFilter/accept", 108.7, "ns/op", 0, "B/op", 0, "allocs/op")
	mixedOK := result(mixed, 0, "extra-attempts", 1, "held-pods", 0, "fail-open")
	coldOK := result(cold, 0, "extra-attempts", 100, "held-pods", 0, "fail-open")
	batchDefault := result(perfName("Batching_HostPort_Default", smokeBatchingWorkload), 0.96, "batch-hint-used/pod")
	batchArchFilter := func(v float64) string {
		return result(perfName("Batching_HostPort_ArchFilter", smokeBatchingWorkload), v, "batch-hint-used/pod")
	}
	batchOK := []string{batchDefault, batchArchFilter(0.96)}
	const batchMsg = "Batching_HostPort: ArchFilter's profile batches as the default does (cycles that took the batching hint per pod: default %v, ArchFilter %v)"
	tests := []struct {
		name       string
		lines      []string
		wantFailed []string // the messages of the checks that fail, in order
	}{
		{
			name:  "every gate passes",
			lines: append([]string{accept, mixedOK, coldOK}, batchOK...),
		},
		{
			name:       "Filter allocates on the accept path",
			lines:      append([]string{result("BenchmarkFilter/accept", 130, "ns/op", 16, "B/op", 1, "allocs/op"), mixedOK, coldOK}, batchOK...),
			wantFailed: []string{"ArchFilter Filter allocates nothing on the accept path (allocs/op: 1, found: true)"},
		},
		{
			name:       "Filter allocates in one run of several",
			lines:      append([]string{accept, result("BenchmarkFilter/accept", 130, "ns/op", 16, "B/op", 1, "allocs/op"), mixedOK, coldOK}, batchOK...),
			wantFailed: []string{"ArchFilter Filter allocates nothing on the accept path (allocs/op: 0.5, found: true)"},
		},
		{
			name:       "Filter benchmark did not run",
			lines:      append([]string{result("BenchmarkFilter/reject", 222.3, "ns/op", 80, "B/op", 2, "allocs/op"), mixedOK, coldOK}, batchOK...),
			wantFailed: []string{"ArchFilter Filter allocates nothing on the accept path (allocs/op: 0, found: false)"},
		},
		{
			name:  "no scheduler_perf workload ran",
			lines: []string{accept},
			wantFailed: []string{
				"scheduler_perf workloads ran (0)",
				"ColdCache_ArchFilter held its pods at PreEnqueue (held: 0), so the check above means something",
				fmt.Sprintf(batchMsg, 0, 0),
			},
		},
		{
			name:       "ArchFilter's profile does not batch",
			lines:      []string{accept, mixedOK, coldOK, batchDefault, batchArchFilter(0)},
			wantFailed: []string{fmt.Sprintf(batchMsg, 0.96, 0)},
		},
		{
			name:       "nothing batched at all: the check proves nothing",
			lines:      []string{accept, mixedOK, coldOK, result(perfName("Batching_HostPort_Default", smokeBatchingWorkload), 0, "batch-hint-used/pod"), batchArchFilter(0)},
			wantFailed: []string{fmt.Sprintf(batchMsg, 0, 0)},
		},
		{
			name:       "held pods attempted: extra scheduling attempts",
			lines:      append([]string{accept, result(mixed, 2, "extra-attempts", 1, "held-pods"), coldOK}, batchOK...),
			wantFailed: []string{"MixedArch_ArchFilter/50Nodes_100Pods: no scheduling attempts beyond one per pod (extra: 2)"},
		},
		{
			name:       "extra attempts count over every round",
			lines:      append([]string{accept, mixedOK, coldOK, result(cold, 1, "extra-attempts", 100, "held-pods", 0, "fail-open")}, batchOK...),
			wantFailed: []string{"ColdCache_ArchFilter/50Nodes_100Pods: no scheduling attempts beyond one per pod (extra: 1)"},
		},
		{
			name:       "a workload without the observer's extra-attempts",
			lines:      append([]string{accept, result(mixed, 0.5, "SchedulingThroughput/Average"), coldOK}, batchOK...),
			wantFailed: []string{"MixedArch_ArchFilter/50Nodes_100Pods: no scheduling attempts beyond one per pod (extra: 0)"},
		},
		{
			name:       "cold cache held no pod, so attempts prove nothing",
			lines:      append([]string{accept, mixedOK, result(cold, 0, "extra-attempts", 0, "held-pods", 0, "fail-open")}, batchOK...),
			wantFailed: []string{"ColdCache_ArchFilter held its pods at PreEnqueue (held: 0), so the check above means something"},
		},
		{
			name:       "cold cache failed open",
			lines:      append([]string{accept, mixedOK, result(cold, 0, "extra-attempts", 100, "held-pods", 3, "fail-open")}, batchOK...),
			wantFailed: []string{"ColdCache_ArchFilter resolved every image (failed open: 3)"},
		},
		{
			name: "another scale's workloads are not judged",
			lines: append([]string{accept, mixedOK, coldOK,
				result(perfName("MixedArch_ArchFilter", "500Nodes_2000Pods"), 5, "extra-attempts"),
				result(perfName("ColdCache_ArchFilter", "500Nodes_2000Pods"), 0, "held-pods", 7, "fail-open")}, batchOK...),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var failed []string
			for _, c := range SmokeChecks(parse(t, tc.lines...), smokeWorkload) {
				if !c.OK {
					failed = append(failed, c.Message)
				}
			}
			if diff := cmp.Diff(tc.wantFailed, failed); diff != "" {
				t.Errorf("failed checks (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestSmoke checks what bench-smoke prints and returns: for the output of a real
// make bench-smoke run (testdata/smoke), and for a run that fails two gates.
func TestSmoke(t *testing.T) {
	tests := []struct {
		name    string
		results func(t *testing.T) *Results
		wantErr string
		want    []string
	}{
		{
			name:    "a real bench-smoke run",
			results: func(t *testing.T) *Results { return parseFiles(t, "smoke/micro.txt", "smoke/perf.txt") },
			want: []string{
				"ok:   ArchFilter Filter allocates nothing on the accept path (allocs/op: 0, found: true)",
				"ok:   scheduler_perf workloads ran (6)",
				"ok:   ColdCache_ArchFilter/50Nodes_100Pods: no scheduling attempts beyond one per pod (extra: 0)",
				"ok:   MixedArch_ArchFilter/50Nodes_100Pods: no scheduling attempts beyond one per pod (extra: 0)",
				"ok:   MixedArch_ArchFilterLast/50Nodes_100Pods: no scheduling attempts beyond one per pod (extra: 0)",
				"ok:   MixedArch_Default/50Nodes_100Pods: no scheduling attempts beyond one per pod (extra: 0)",
				"ok:   S390xOnly_ArchFilter/50Nodes_100Pods: no scheduling attempts beyond one per pod (extra: 0)",
				"ok:   S390xOnly_NodeAffinity/50Nodes_100Pods: no scheduling attempts beyond one per pod (extra: 0)",
				"ok:   ColdCache_ArchFilter held its pods at PreEnqueue (held: 100), so the check above means something",
				"ok:   ColdCache_ArchFilter resolved every image (failed open: 0)",
				"ok:   Batching_HostPort: ArchFilter's profile batches as the default does (cycles that took the batching hint per pod: default 0.9608, ArchFilter 0.9608)",
			},
		},
		{
			name: "Filter allocates and the cold cache fails open",
			results: func(t *testing.T) *Results {
				return parse(t,
					result("BenchmarkFilter/accept", 130, "ns/op", 16, "B/op", 1, "allocs/op"),
					result(perfName("ColdCache_ArchFilter", smokeWorkload), 0, "extra-attempts", 100, "held-pods", 2, "fail-open"))
			},
			wantErr: "3 smoke check(s) failed",
			want: []string{
				"FAIL: ArchFilter Filter allocates nothing on the accept path (allocs/op: 1, found: true)",
				"ok:   scheduler_perf workloads ran (1)",
				"ok:   ColdCache_ArchFilter/50Nodes_100Pods: no scheduling attempts beyond one per pod (extra: 0)",
				"ok:   ColdCache_ArchFilter held its pods at PreEnqueue (held: 100), so the check above means something",
				"FAIL: ColdCache_ArchFilter resolved every image (failed open: 2)",
				"FAIL: Batching_HostPort: ArchFilter's profile batches as the default does (cycles that took the batching hint per pod: default 0, ArchFilter 0)",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			err := Smoke(tc.results(t), smokeWorkload, &out)
			if gotErr := fmt.Sprint(err); (tc.wantErr == "" && err != nil) || (tc.wantErr != "" && gotErr != tc.wantErr) {
				t.Errorf("Smoke error = %v, want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")); diff != "" {
				t.Errorf("Smoke output (-want,+got):\n%s", diff)
			}
		})
	}
}

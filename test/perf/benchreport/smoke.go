package benchreport

import (
	"fmt"
	"io"
	"strings"
)

// Check is one of bench-smoke's gates, judged on one run.
type Check struct {
	OK      bool
	Message string
}

// SmokeChecks judges bench-smoke's gates: only gross regressions, never wall-clock
// times. Filter allocates nothing on the accept path; scheduler_perf workloads ran;
// none of them spent a scheduling attempt beyond one per pod (held pods are not
// attempted); the cold-cache workload did hold its pods, so that check means
// something, and resolved every image rather than failing open.
func SmokeChecks(r *Results, workload string) []Check {
	var checks []Check
	check := func(ok bool, format string, args ...any) {
		checks = append(checks, Check{OK: ok, Message: fmt.Sprintf(format, args...)})
	}
	a, ok := r.median("BenchmarkFilter/accept", "allocs/op")
	check(ok && a == 0, "ArchFilter Filter allocates nothing on the accept path (allocs/op: %v, found: %v)", a, ok)
	var names []string
	for _, name := range r.names() {
		if strings.HasPrefix(name, perfPrefix) && strings.HasSuffix(name, "/"+workload) {
			names = append(names, name)
		}
	}
	check(len(names) > 0, "scheduler_perf workloads ran (%d)", len(names))
	for _, n := range names {
		e, ok := r.sum(n, extra)
		check(ok && e == 0, "%s: no scheduling attempts beyond one per pod (extra: %v)", strings.TrimPrefix(n, perfPrefix), e)
	}
	cold := perfName("ColdCache_ArchFilter", workload)
	h, _ := r.sum(cold, held)
	fo, _ := r.sum(cold, failOpen)
	check(h > 0, "ColdCache_ArchFilter held its pods at PreEnqueue (held: %v), so the check above means something", h)
	check(fo == 0, "ColdCache_ArchFilter resolved every image (failed open: %v)", fo)
	// Opportunistic batching (Kubernetes 1.35+) stays on with ArchFilter in the profile.
	hb, okb := r.median(perfName("Batching_HostPort_Default", smokeBatchingWorkload), batchHintUsed)
	hs, oks := r.median(perfName("Batching_HostPort_ArchFilter", smokeBatchingWorkload), batchHintUsed)
	check(okb && oks && hb > 0 && hs >= batchingHintShare*hb,
		"Batching_HostPort: ArchFilter's profile batches as the default does (cycles that took the batching hint per pod: default %v, ArchFilter %v)", hb, hs)
	return checks
}

// smokeBatchingWorkload is the Batching_* test cases' smoke-sized workload.
const smokeBatchingWorkload = "50Nodes"

// Smoke writes the verdict of every gate to w, one a line, and fails if any gate does.
func Smoke(r *Results, workload string, w io.Writer) error {
	failed := 0
	for _, c := range SmokeChecks(r, workload) {
		if c.OK {
			fmt.Fprintln(w, "ok:  ", c.Message)
			continue
		}
		fmt.Fprintln(w, "FAIL:", c.Message)
		failed++
	}
	if failed > 0 {
		return fmt.Errorf("%d smoke check(s) failed", failed)
	}
	return nil
}

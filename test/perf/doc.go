// Package perf measures archfilter inside kube-scheduler's own benchmark harness,
// k8s.io/kubernetes/test/integration/scheduler_perf: the workloads in config/ run the
// real scheduler with and without ArchFilter against an in-process apiserver, with
// in-memory registries on loopback. The code is in the package's tests; hack/bench
// runs them (make bench, make bench-smoke), and test/perf/report (package
// benchreport) turns their output into docs/benchmarks.md and bench-smoke's verdict.
//
// The harness is the main line's (go.mod; the tests carry the !k8s1.35 tag): its
// API moves between minors (1.37's workloads take client-go/ktesting's
// TContext), and the scheduler-plugins flavour is not benchmarked here.
package perf

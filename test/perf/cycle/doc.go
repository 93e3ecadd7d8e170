// Package cycle measures one kube-scheduler scheduling cycle (SchedulePod: PreFilter,
// Filter, PreScore, Score over 5 000 nodes, no apiserver and no binding) with and
// without ArchFilter, next to a minimal plugin that rejects the same nodes: what
// ArchFilter adds to the scheduling algorithm itself, without the noise that etcd,
// kube-apiserver and the pod creator add to test/perf's scheduler_perf workloads on
// the same cores. BenchmarkSchedulingCycleNodes repeats the ArchFilter, default and
// node-affinity cases over clusters of 1 000 to 15 000 nodes (the cost curve), and
// BenchmarkSchedulingCycle's spread cases schedule upstream scheduler_perf's
// TopologySpreading pods over its zone-labelled nodes with and without ArchFilter.
// The code is in the package's tests; hack/bench runs both benchmarks (make bench,
// BENCH_CURVE for the curve) and test/perf/benchreport summarises them.
package cycle

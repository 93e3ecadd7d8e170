// Package cycle measures one kube-scheduler scheduling cycle (SchedulePod: PreFilter,
// Filter, PreScore, Score over 5 000 nodes, no apiserver and no binding) with and
// without ArchFilter, next to a minimal plugin that rejects the same nodes: what
// ArchFilter adds to the scheduling algorithm itself, without the noise that etcd,
// kube-apiserver and the pod creator add to test/perf's scheduler_perf workloads on
// the same cores. The code is in the package's tests; hack/bench runs the benchmark
// (make bench) and test/perf/benchreport summarises it.
package cycle

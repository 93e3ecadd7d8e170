package benchreport

// method is the part of the document that does not change between runs.
const method = `
## Method

**Throughput** runs kube-scheduler's own benchmark harness,
` + "`k8s.io/kubernetes/test/integration/scheduler_perf`" + ` (` + "`RunBenchmarkPerfScheduling`" + ` with ArchFilter in
the out-of-tree registry and a scheduler configuration per test case), from
[test/perf](../test/perf): every workload of
[performance-config.yaml](../test/perf/config/performance-config.yaml) gets a fresh etcd,
kube-apiserver and scheduler in one process, and all of them run in one ` + "`go test`" + ` invocation,
all workloads once per round, ` + "`BENCH_ROUNDS`" + ` rounds in turn (5 by default), so that the two sides of every ratio
share the machine's state. Each ratio is the ratio of the two medians; beside it are the ratios of
the rounds (round i of one side against round i of the other) and how many of them meet the target.
When every round agrees, the sign test gives the confidence of the verdict: were the ratio as
likely to fall on either side of the target in any round, n rounds would all agree with probability
2·0.5ⁿ, so n agreeing rounds support it with confidence 1 − 0.5ⁿ (97 % for 5 rounds); rounds that
disagree support no confident verdict. Nodes are 60 % linux/amd64, 30 % linux/arm64 and 10 % linux/s390x, interleaved.
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
- **Baselines users compare against.** *Everywhere*: each pod's image is an index for every
  node architecture (amd64, arm64, s390x), so ArchFilter rejects no node; the pair, default
  profile against the ArchFilter profile, is what turning ArchFilter on costs. Since ArchFilter's
  PreFilter returns Skip for a pod whose platforms cover every platform of its node table, such a
  pod's cycles do not call its Filter, and its Reserve checks the chosen node's labels, once per
  pod; runs of earlier code called Filter on every examined node. The scheduling cycle's rows say
  which their run measured (its metric ` + "`archfilter-filter-skip`" + `); scheduler_perf's results do
  not: which code a throughput row measured is its run's commit. *Multi-arch pods
  against required node affinity*: the same amd64+arm64 pods as above, each carrying the
  required ` + "`kubernetes.io/arch In [amd64, arm64]`" + ` node affinity that hand-written manifests or
  a pod-placement operator such as MTO give, under the default profile. The default profile
  without that affinity (the first pair above) places some of those pods on s390x nodes,
  where their containers would fail with ` + "`exec format error`" + `: a throughput no correct
  scheduler can reach, shown for reference.
- **What rejecting a node costs, whoever rejects it.** kube-scheduler stops filtering once it
  has found enough feasible nodes (` + "`numFeasibleNodesToFind`" + ` in
  ` + "`pkg/scheduler/schedule_one.go`" + `: with percentageOfNodesToScore unset, 50 % minus one
  point per 125 nodes, at least 5 % and at least 100 nodes; 500 of 5 000 nodes). When a
  fraction f of the nodes is rejected, it examines about 1/(1−f) times as many nodes to find
  them, and every Filter plugin runs on each: 556 instead of 500 at full scale for the
  multi-arch pods (f = 10 %), all 5 000 for the s390x-only pods under node affinity (f = 90 %),
  which is why narrowing with a PreFilterResult wins there. For each rejected node the
  scheduler also allocates a status record and, after the parallel phase, adds it to the
  cycle's diagnosis map, one at a time. These costs are the scheduler's: they are the same
  whichever plugin rejects the node, which is why the multi-arch pods are compared with
  required node affinity, not with a profile that rejects nothing.
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
- **Upstream's workloads** (the no-regression table): scheduler_perf's own SchedulingBasic,
  SchedulingNodeAffinity, SchedulingPodAffinity, TopologySpreading and PreemptionBasic, with
  upstream's node and pod templates (read from the module cache) and upstream's sizes for the
  scale (500 nodes at small; at full 5 000 nodes, and 1 000 for PreemptionBasic, its largest
  upstream size), each run by the default profile and by the ArchFilter profile. Their pods run
  ` + "`registry.k8s.io/pause`" + `, which the ArchFilter profile resolves through the warm registry as a
  mirror of registry.k8s.io, and the init pods warm the cache. Upstream's nodes carry no
  ` + "`kubernetes.io/arch`" + ` label, so no node is filtered out: the ratio is what ArchFilter's per-cycle
  work (PreEnqueue, PreFilter, Filter, Score) costs the workloads users already run.
- **Opportunistic batching** (Kubernetes 1.35+, KEP-5598): a cycle may take the previous
  cycle's next-best node for a pod of the same signature, unless a Filter or Score plugin of the
  profile cannot sign pods, which turns batching off for the whole profile. Upstream's batching
  workloads (` + "`test/integration/scheduler_perf/batching`" + ` of Kubernetes 1.37: pods with host port 80,
  and pods requesting 3 of a node-default node's 4 CPUs, one per node, the best case for batching),
  at 2 000 nodes (small) and 5 000 (full), with PodTopologySpread's system-default constraints off as
  upstream configures them, each run three ways in one invocation: the default profile and the
  ArchFilter profile with the feature gate on, and the default profile with it off (what batching
  is worth here). The harness counts ` + "`scheduler_batch_attempts_total{result=hint_used}`" + ` per pod:
  ArchFilter's profile must take the hint in at least 0.9 of the cycles the default profile does
  (a profile without batching takes it in none), and ` + "`make bench-smoke`" + ` (CI) checks the same at
  50 nodes.

**Scheduling cycle** (` + "`BenchmarkSchedulingCycle`" + ` in [test/perf/cycle](../test/perf/cycle)) times one call of
the scheduler's ` + "`SchedulePod`" + `: the scheduling algorithm of one pod (PreFilter, Filter, PreScore, Score
and the choice of a node) in a real kube-scheduler (` + "`scheduler.New`" + `) over a fake clientset of 5 000
nodes of the mix above, with kube-scheduler's own parallelism (16 goroutines) and
percentageOfNodesToScore unset (500 feasible nodes at 5 000), as in production. Each iteration
schedules a fresh pod that is never bound, so every cycle sees the same cluster. No apiserver,
etcd or pod creator shares the cores, and neither the queue nor binding runs: the figures are the
algorithm's cost alone, which complements scheduler_perf's throughput (what a cluster sees end to
end, but swinging by ±15–30 % from round to round on two cores). The profiles are the default one;
the ArchFilter profile of ` + "`manifests/scheduler-config/default-scheduler.yaml`" + `, whose images ArchFilter's
PreEnqueue resolves through an in-memory registry before the timing starts, so the measured pods
take the steady-state path (a resolver Lookup in PreFilter); and the default plus a minimal Filter
plugin, enabled as ArchFilter is (first among the Filter plugins), that reads each node's
` + "`kubernetes.io/arch`" + ` label and rejects the architectures outside a fixed set with a status per
rejection. That plugin pays only what rejecting the s390x nodes costs the scheduler, whoever
rejects them (more nodes examined, a status and a diagnosis entry per rejected node: see above),
so *ArchFilter / minimal plugin* says how close ArchFilter comes to the cost no plugin avoids.
The *spread* cases are upstream scheduler_perf's TopologySpreading in one cycle: its
node-default nodes (no ` + "`kubernetes.io/arch`" + ` label) labelled with three zones, two of its pod-default
pods bound to each, and its pods spread over the zones (maxSkew 5, DoNotSchedule), in a second cluster
of 5 000 nodes; their images run on every architecture, as upstream's pause does. The *preempt*
cases are upstream's PreemptionBasic in one cycle: 5 000 node-default nodes, each full with four
pod-low-priority pods (900m CPU each), and a pod-high-priority pod (priority 10, 3 CPUs) that no
node fits. A cycle is ` + "`SchedulePod`" + `'s FitError over every node followed by the PostFilter plugins:
DefaultPreemption dry-runs the removal of victims on its candidate nodes (cloning the cycle state and
calling each plugin's AddPod/RemovePod extensions per victim, then the Filter plugins again) and
nominates a node; its asynchronous deletions reach a fake API server that drops them, so every
cycle finds the same victims. ArchFilter has no PreFilterExtensions (its decision depends on no
other pod) and its cycle state is immutable (Clone returns it), so preemption calls nothing of
ArchFilter's per victim or per candidate. After the rounds, one more pass of the two upstream
workloads' ArchFilter cases runs under the CPU profiler, and the report gives the share of the
process's CPU spent in ArchFilter's own functions. The *skip floor* case adds a plugin whose
PreFilter returns Skip for every pod (its Filter is never called), enabled as ArchFilter is: what
the framework charges any Filter plugin that asks to be skipped (its PreFilter call, and the skip
set looked up for every examined node), the floor under ArchFilter's cost for pods that run on every
platform of the cluster.
` + "`make bench`" + ` runs the benchmark once per round, ` + "`BENCH_MICRO_COUNT`" + ` rounds, every other one in reverse
order; its ratios are of cycles per second (the inverse ratio of the median times), beside the
ratios of the rounds and the sign test's confidence, as for throughput.

**Scheduling cycle against cluster size** (` + "`BenchmarkSchedulingCycleNodes`" + `, the same package, run by
` + "`make bench BENCH_CURVE=1000,5000,15000`" + `, ` + "`BENCH_CURVE_ROUNDS`" + ` rounds, 3 by default) runs the
ArchFilter, default and node-affinity cases above over clusters of each node count, up to the
Kubernetes scalability limit of 15 000 nodes, with percentageOfNodesToScore unset as in production.
A cycle's Filter phase stops once it has found ` + "`numFeasibleNodesToFind`" + ` feasible nodes
(` + "`pkg/scheduler/schedule_one.go`" + `): every node under 100; otherwise 50 % minus one point per 125 nodes,
at least 5 % and at least 100 nodes. That is 420 of 1 000 nodes (42 %), 500 of 5 000 (10 %) and 750 of
15 000 (5 %): ×1.79 for ×15 nodes. When a share f of the searched nodes is feasible, the cycle examines
about that number divided by f (all of them if fewer are feasible), runs every Filter plugin on each,
and scores the feasible ones it found, so a cycle's cost follows the nodes it examines, not the
cluster's size: 467, 556 and 834 for the multi-arch pods (f = 90 %) under ArchFilter or node affinity;
all 1 000, all 5 000 and 7 500 of 15 000 for s390x-only pods under node affinity (f = 10 %); and, for
ArchFilter's s390x-only pods, whose PreFilterResult narrows the search to the s390x tenth of the
cluster, all 100 of 100, 230 of 500 and 570 of 1 500. Each case's row gives the nodes examined beside
its times and compares the growth of its CPU time per cycle (` + "`cpu-ns/op`" + `, the whole process's CPU
time, steadier than wall time on shared cores) from the smallest cluster to the largest with the
growth of those nodes: within a factor of 1.5 of it, the cost is called linear in the nodes examined.
The ratios compare cases of the same cluster, in the same run.

**Micro-benchmarks** are the plugin's and the resolver's ` + "`go test -bench`" + ` benchmarks
(` + "`pkg/plugins/archfilter`" + `, ` + "`pkg/resolver`" + `) with ` + "`-benchmem`" + `: Filter on the accept and reject paths
next to the in-tree NodeAffinity Filter on the same nodes, PreFilter and PreEnqueue with a warm
cache, Score, the resolver's warm Lookup, and the resolver cache's memory, measured as the live
heap (after a GC) before and after storing 10 000 answers the way a resolution stores them, and
100 000 (the default cache.maxEntries) for the curve of memory against the images cached.

**Caveats.** The machine has two cores shared with other work. scheduler_perf runs etcd, the
apiserver, the pod creator and the scheduler in one process on those cores, so a faster
scheduler is partly hidden behind pod creation (compare *bind rate* with *created-pods/s* in
the raw output) and single runs vary by ±10–20 %: read ratios as medians over the runs, with
the spread shown in the raw output. ` + "`make bench BENCH_SCALE=full`" + ` runs the issue's 5 000 nodes and
10 000 pods, where the scheduler rather than pod creation sets the pace.

` + "`make bench-smoke`" + ` (CI) fails only on gross regressions: Filter allocating on the accept path, or
held pods consuming scheduling cycles (in 50-node workloads). It never checks a time.
`

// combining ends the method of a document built from several runs.
const combining = `
**Several runs.** ` + "`make bench-report BENCH_RUNS=\"dir1 dir2\"`" + ` writes this document from the raw
outputs of several runs (` + "`.cache/bench/`" + ` directories), running no benchmark. Each comparison (a
throughput pair, an upstream test case, the cold cache, the registry outage) takes the run of the
largest scale that measured both its sides, the newest of those on a tie, and every ratio divides
two figures of that one run: runs differ in load, in commit and perhaps in scale. The
micro-benchmarks come from the newest run that has them, the CPU profile from the run of the largest
scale that has one. The *run* column and the lines under the sections name the run of each figure.
`

// profileIntro opens the CPU profile section.
const profileIntro = `
## Where the CPU goes

A CPU profile of the whole scheduler_perf run (` + "`go test -cpuprofile`" + `: every workload
of every round, with and without ArchFilter, and the in-process kube-apiserver and pod creator
that share the cores; etcd runs in its own process and is not in it). The first table keeps the
samples with an ArchFilter function on the stack (` + "`-focus`" + ` on
` + "`pkg/plugins/archfilter`" + ` and ` + "`pkg/resolver`" + `), so its *cum%* column is each function's share of
all the CPU the run used; the second is the whole process by cumulative time. The profile file
is kept under ` + "`.cache/bench/`" + ` (` + "`go tool pprof -http=: perf.cpu.pprof`" + ` for the flame graph).
`

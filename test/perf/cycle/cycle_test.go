package cycle

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// benchNodes is the cluster, and test/perf's full scale.
const benchNodes = 5000

// reverse runs the cases in reverse order. hack/bench runs the benchmark once per
// round and reverses every other round, as test/perf reverses its workloads, so
// that neither side of a pair always runs first.
var reverse = flag.Bool("reverse", false, "run BenchmarkSchedulingCycle's cases in reverse order")

// cycleCase is a sub-benchmark: pods of one kind, scheduled by one profile.
type cycleCase struct {
	// name is "<pods>/<profile>", the sub-benchmark's name.
	name    string
	profile string
	img     image
	// affinity, if any, is the pods' required node affinity kubernetes.io/arch In affinity.
	affinity []string
	// allowed are the architectures a pod may be placed on; nil for any.
	allowed []string
	// spread gives the pods upstream's topology spread constraint (spreadPod).
	spread bool
	// preempt makes the pods upstream's high-priority ones (highPriority): each
	// cycle fails and preempts (preemptCycle).
	preempt bool
}

var cases = []cycleCase{
	// The default profile places some of these pods on s390x nodes, where they
	// cannot run: a reference no correct scheduler can match.
	{name: "multiarch/default", profile: profileDefault, img: imageMultiArch},
	{name: "multiarch/minimal", profile: profileMinimal, img: imageMultiArch, allowed: minimalAllowed},
	{name: "multiarch/archfilter", profile: profileArchFilter, img: imageMultiArch, allowed: []string{"amd64", "arm64"}},
	{name: "multiarch-affinity/default", profile: profileDefault, img: imageMultiArch,
		affinity: []string{"amd64", "arm64"}, allowed: []string{"amd64", "arm64"}},
	{name: "everywhere/default", profile: profileDefault, img: imageEverywhere},
	{name: "everywhere/minimal", profile: profileMinimalAll, img: imageEverywhere, allowed: minimalAllAllowed},
	{name: "everywhere/skip-floor", profile: profileSkipFloor, img: imageEverywhere},
	{name: "everywhere/archfilter", profile: profileArchFilter, img: imageEverywhere, allowed: []string{"amd64", "arm64", "s390x"}},
	{name: "s390x/archfilter", profile: profileArchFilter, img: imageS390x, allowed: []string{"s390x"}},
	{name: "s390x-affinity/default", profile: profileDefault, img: imageS390x,
		affinity: []string{"s390x"}, allowed: []string{"s390x"}},
}

// BenchmarkSchedulingCycle times Scheduler.SchedulePod, the scheduling algorithm
// (PreFilter, Filter, PreScore, Score and the choice of a node) of one pod over
// benchNodes nodes, with kube-scheduler's own parallelism (16) and adaptive
// percentageOfNodesToScore (500 feasible nodes at 5 000). Each iteration schedules
// a fresh pod that is never bound, so every cycle sees the same cluster. What
// scheduler_perf adds around it (queue, binding, apiserver, etcd, the pod creator)
// is left out, and so is its noise.
// Its spread/* cases (spreadCases) are upstream TopologySpreading's pods over
// upstream's layout of benchNodes nodes, and its preempt/* cases (preemptCases)
// upstream PreemptionBasic's, each in a cluster of their own.
func BenchmarkSchedulingCycle(b *testing.B) {
	// The global klog logger at verbosity 0, as a production scheduler logs.
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	parent := b
	// Each layout's cluster is built when the first of its cases runs (go test -bench
	// BenchmarkSchedulingCycle/multiarch leaves the others out), and lives as long as
	// the parent benchmark: a sub-benchmark's cleanups run after each of its runs, the
	// first of which has b.N = 1.
	var mixed, spread, preempt *cluster
	clusterFor := func(b *testing.B, tc cycleCase) *cluster {
		owner := cleanupTo{TB: b, owner: parent}
		switch {
		case tc.spread:
			if spread == nil {
				spread = newClusterOf(owner, ctx, spreadLayout(benchNodes))
			}
			return spread
		case tc.preempt:
			if preempt == nil {
				preempt = newClusterOf(owner, ctx, preemptLayout(benchNodes))
			}
			return preempt
		}
		if mixed == nil {
			mixed = newCluster(owner, ctx, benchNodes)
		}
		return mixed
	}
	all := slices.Concat(cases, spreadCases, preemptCases)
	for _, tc := range orderedCases(all) {
		b.Run(tc.name, func(b *testing.B) { clusterFor(b, tc).benchCase(b, ctx, tc) })
	}
	// The every-architecture cases again, a cycle of each in turn (benchInterleaved).
	b.Run("everywhere/interleaved", func(b *testing.B) {
		clusterFor(b, caseNamed(b, interleavedCases[0])).benchInterleaved(b, ctx, interleavedCases)
	})
}

// cleanupTo is TB, whose cleanups owner runs instead: for what a sub-benchmark
// builds for its siblings too.
type cleanupTo struct {
	testing.TB
	owner testing.TB
}

func (c cleanupTo) Cleanup(f func()) { c.owner.Cleanup(f) }

// orderedCases are cs in the order of -reverse.
func orderedCases(cs []cycleCase) []cycleCase {
	order := slices.Clone(cs)
	if *reverse {
		slices.Reverse(order)
	}
	return order
}

// curveNodes are BenchmarkSchedulingCycleNodes' cluster sizes, up to the
// Kubernetes scalability limit (15 000 nodes).
var curveNodes = flag.String("nodes", "1000,5000,15000", "BenchmarkSchedulingCycleNodes' node counts, comma-separated")

// curveCases are the cases of the cost curve: ArchFilter against the default
// profile and against required node affinity.
var curveCases = []string{
	"multiarch/default", "multiarch/archfilter", "multiarch-affinity/default",
	"everywhere/default", "everywhere/skip-floor", "everywhere/archfilter",
	"s390x/archfilter", "s390x-affinity/default",
}

// BenchmarkSchedulingCycleNodes is BenchmarkSchedulingCycle's ArchFilter, default
// and node affinity cases over clusters of each size of -nodes (sub-benchmarks
// nodes=<n>/<case>): how each cost grows with the cluster. percentageOfNodesToScore
// stays adaptive, as in production: a cycle looks for 420 feasible nodes of 1 000
// (42 %), 500 of 5 000 (10 %) and 750 of 15 000 (5 %). make bench runs it only when asked
// (make bench BENCH_CURVE=1000,5000,15000: docs/benchmarks.md's curve section); run it alone with
// go test ./test/perf/cycle -run '^$' -bench BenchmarkSchedulingCycleNodes [-args -nodes=1000,5000].
func BenchmarkSchedulingCycleNodes(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	for _, field := range strings.Split(*curveNodes, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(field), &n); err != nil || n <= 0 {
			b.Fatalf("-nodes: %q is not a node count", field)
		}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			c := newCluster(b, ctx, n)
			order := slices.Clone(curveCases)
			if *reverse {
				slices.Reverse(order)
			}
			for _, name := range order {
				i := slices.IndexFunc(cases, func(tc cycleCase) bool { return tc.name == name })
				if i < 0 {
					b.Fatalf("no case %q", name)
				}
				b.Run(name, func(b *testing.B) { c.benchCase(b, ctx, cases[i]) })
			}
		})
	}
}

// benchCase times SchedulePod for b.N fresh pods of tc and checks where they landed.
func (c *cluster) benchCase(b *testing.B, ctx context.Context, tc cycleCase) {
	fw := c.sched.Profiles[tc.profile]
	pods := c.queuedPods(b, tc, b.N)
	if tc.preempt {
		c.createPods(b, ctx, pods)
	}
	hosts := make([]string, b.N)
	// Each case starts from a collected heap, whatever ran before it.
	runtime.GC()
	b.ReportAllocs()
	var state *framework.CycleState
	cpu0 := processCPU(b)
	b.ResetTimer()
	for i, pod := range pods {
		state = framework.NewCycleState()
		if tc.preempt {
			hosts[i] = c.preemptCycle(b, ctx, fw, state, pod)
			continue
		}
		res, err := c.sched.SchedulePod(ctx, fw, state, pod)
		if err != nil {
			b.Fatalf("cycle %d: %v", i, err)
		}
		hosts[i] = res.SuggestedHost
	}
	b.StopTimer()
	// CPU time of the whole process (every goroutine of the cycle's 16) per cycle:
	// unlike ns/op, it barely moves when other processes take the cores.
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	if tc.profile == profileArchFilter {
		// Whether the last cycle skipped ArchFilter's Filter (PreFilter's Skip), so
		// that the report can say which code a run measured.
		skipped := 0.0
		if state.GetSkipFilterPlugins().Has(archfilter.Name) {
			skipped = 1
		}
		b.ReportMetric(skipped, filterSkipMetric)
	}
	c.checkPlacements(b, tc, hosts)
}

// filterSkipMetric is the unit of the metric that says whether ArchFilter's Filter
// was skipped in a case's cycles (1) or ran (0): test/perf/benchreport words the
// every-architecture rows by it.
const filterSkipMetric = "archfilter-filter-skip"

// processCPU is the user and system CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestSchedulingCycle runs a cycle of each of the benchmark's cases and checks
// where the pod lands: on an allowed architecture with ArchFilter, the minimal
// plugin and node affinity. It also checks what makes the profiles comparable,
// and that the default profile's multi-arch pods are really unconstrained.
func TestSchedulingCycle(t *testing.T) {
	// Verbosity 1 rather than ktesting's 5: from 2 on, the scheduler logs every
	// node it adds, and from 5 every node a cycle examines.
	ctx := klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(1))))
	c := newCluster(t, ctx, benchNodes)

	// ArchFilter, the minimal plugins and the skip floor all run first among the Filter plugins.
	for profile, first := range map[string]string{profileArchFilter: archfilter.Name, profileMinimal: minimalName,
		profileMinimalAll: minimalAllName, profileSkipFloor: skipFloorName} {
		filters := c.sched.Profiles[profile].ListPlugins().Filter.Enabled
		if len(filters) < 2 || filters[0].Name != first {
			t.Errorf("profile %s: Filter plugins %v, want %s first", profile, filters, first)
		}
	}

	// Placements cannot show that the default profile would put multi-arch pods
	// on s390x: with equal scores and no extender, kube-scheduler 1.36 takes the
	// first feasible node it found, and the search's start advances by the 500
	// nodes a cycle examines, always to an amd64 node. Its Filter plugins can.
	s390xNode := "node-00009"
	pod := c.makePod("feasibility", profileDefault, imageMultiArch, nil)
	if !c.feasible(t, ctx, profileDefault, pod, s390xNode) {
		t.Errorf("the default profile rejects %s (s390x) for a multi-arch pod: the baseline looks constrained", s390xNode)
	}
	if c.feasible(t, ctx, profileArchFilter, pod, s390xNode) {
		t.Errorf("ArchFilter's profile accepts %s (s390x) for a multi-arch pod", s390xNode)
	}

	// Pods that run on every node architecture cost ArchFilter no Filter call.
	state := framework.NewCycleState()
	everywhere := c.makePod("skip", profileArchFilter, imageEverywhere, nil)
	if _, s, _ := c.sched.Profiles[profileArchFilter].RunPreFilterPlugins(ctx, state, everywhere); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	if !state.GetSkipFilterPlugins().Has(archfilter.Name) {
		t.Errorf("ArchFilter's Filter runs for a pod of every node architecture; skipped: %v", state.GetSkipFilterPlugins())
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.sched.SchedulePod(ctx, c.sched.Profiles[tc.profile], framework.NewCycleState(), c.queuedPods(t, tc, 1)[0])
			if err != nil {
				t.Fatal(err)
			}
			c.checkPlacements(t, tc, []string{res.SuggestedHost})
		})
	}
}

// feasible says whether profile's PreFilter and Filter plugins accept node for pod.
func (c *cluster) feasible(tb testing.TB, ctx context.Context, profile string, pod *v1.Pod, node string) bool {
	tb.Helper()
	fw := c.sched.Profiles[profile]
	state := framework.NewCycleState()
	if _, s, _ := fw.RunPreFilterPlugins(ctx, state, pod); !s.IsSuccess() {
		tb.Fatalf("profile %s: PreFilter: %v", profile, s)
	}
	info, err := fw.SnapshotSharedLister().NodeInfos().Get(node)
	if err != nil {
		tb.Fatal(err)
	}
	return fw.RunFilterPlugins(ctx, state, pod, info).IsSuccess()
}

// queuedPods makes n fresh pods of tc (distinct names and UIDs) as the
// scheduling queue hands them to a cycle.
func (c *cluster) queuedPods(tb testing.TB, tc cycleCase, n int) []queuedPod {
	tb.Helper()
	kind := strings.ReplaceAll(tc.name, "/", "-")
	out := make([]queuedPod, n)
	for i := range out {
		c.podSeq++
		pod := c.makePod(fmt.Sprintf("%s-%d", kind, c.podSeq), tc.profile, tc.img, tc.affinity)
		if tc.spread {
			spreadPod(pod)
		}
		if tc.preempt {
			highPriority(pod)
		}
		q, err := newQueuedPod(pod)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = q
	}
	return out
}

// checkPlacements fails tb if a host is not a node of an allowed architecture.
func (c *cluster) checkPlacements(tb testing.TB, tc cycleCase, hosts []string) {
	tb.Helper()
	for i, host := range hosts {
		arch, ok := c.arch[host]
		if !ok {
			tb.Fatalf("cycle %d chose %q, which is no node", i, host)
		}
		if tc.allowed != nil && !slices.Contains(tc.allowed, arch) {
			tb.Fatalf("cycle %d placed a pod of %s (profile %s) on %s, a %s node; want one of %v", i, tc.img.repo, tc.profile, host, arch, tc.allowed)
		}
	}
}

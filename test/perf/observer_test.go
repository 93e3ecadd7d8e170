//go:build !k8s1.35

package perf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// measuredNamespace is where workloads create the pods they measure, unless
// the createPods op that collects metrics names another (loadWorkloads).
const measuredNamespace = "measure"

// observer watches each workload from the outside: it sets the outage registry's
// fault, follows pods with an informer of its own, and when every pod is bound reads
// the scheduler's and ArchFilter's counters (before scheduler_perf resets them at the
// end of the workload). The figures are reported as extra benchmark metrics of the
// workload (observer.report).
type observer struct {
	regs      *registries
	workloads map[string]workload
}

// prepare runs before each workload's ops, once its scheduler is running.
func (o *observer) prepare(tCtx ktesting.TContext) error {
	b, ok := tCtx.TB().(*testing.B)
	if !ok {
		return fmt.Errorf("prepare: want a benchmark, got %T", tCtx.TB())
	}
	// "BenchmarkPerfScheduling/round-N/TestCase/Workload"
	parts := strings.SplitN(tCtx.Name(), "/", 4)
	if len(parts) != 4 {
		return fmt.Errorf("prepare: unexpected benchmark name %q", tCtx.Name())
	}
	name := parts[2] + "/" + parts[3]
	w, ok := o.workloads[name]
	if !ok {
		return fmt.Errorf("prepare: workload %q is not in the configuration", name)
	}
	workloadName := parts[3]
	for _, r := range o.regs.all() {
		r.reopen()
	}
	switch {
	case strings.HasPrefix(workloadName, "Down_"):
		o.regs.outage.ClearFaults()
		o.regs.outage.AddFault(registrytest.Fault{Status: 503, Body: []byte(`{"errors":[{"code":"UNAVAILABLE","message":"down for the benchmark"}]}`)})
	case strings.HasPrefix(workloadName, "Slow2s_"):
		o.regs.outage.setLatency(slowLatency)
	default:
		o.regs.outage.setLatency(registryLatency)
	}
	before := map[*registry]int{}
	for _, r := range o.regs.all() {
		before[r] = r.Requests.Len()
	}

	wr := newWorkloadRun(w)
	factory := informers.NewSharedInformerFactory(tCtx.Client(), 0)
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { wr.observe(obj) },
		UpdateFunc: func(_, obj any) { wr.observe(obj) },
	}); err != nil {
		return err
	}
	// A stop channel of its own: tCtx is only cancelled after this workload's
	// cleanups, and the informer must be gone before the leak check.
	stopCh := make(chan struct{})
	factory.Start(stopCh)
	factory.WaitForCacheSync(stopCh)

	// Cleanups run last-in first-out: this one after scheduler_perf has stopped the
	// workload, before it stops the apiserver and checks for leaked goroutines.
	b.Cleanup(func() {
		close(stopCh)
		factory.Shutdown()
		wr.stop()
		for _, r := range o.regs.all() {
			r.disconnect()
		}
		o.report(b, wr, before)
	})
	return nil
}

// report adds the workload's figures to its benchmark result:
//
//	measured-pods/s      measured pods bound per second, first to last bind
//	created-pods/s       measured pods created per second (as the informer saw them):
//	                     when it is close to measured-pods/s, creation was the limit
//	all-bound-s          from the first measured pod's creation to the last one's bind
//	attempts/pod         scheduling attempts (scheduler_schedule_attempts_total) per pod
//	extra-attempts       attempts beyond one per pod: cycles spent on pods that were
//	                     not ready (e.g. held pods let through); 0 is the target
//	held-pods            pods ArchFilter held at PreEnqueue (archfilter_pods_held_total)
//	released-timeout     held pods released by maxWait rather than an answer
//	fail-open            cycles that ignored unresolved images (failurePolicy Ignore)
//	batch-hint-used/pod  cycles that took opportunistic batching's hint (the previous
//	                     cycle's next-best node for a pod of the same signature), per pod
//	batch-attempts/pod   cycles that asked for one (scheduler_batch_attempts_total), per pod
//	<reg>-req/image      requests the registry answered per distinct image of the pods
//	<reg>-manifest-req/image  the manifest GETs and HEADs among them
func (o *observer) report(b *testing.B, wr *workloadRun, before map[*registry]int) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if wr.measuredBound > 1 && wr.lastBound.After(wr.firstBound) {
		b.ReportMetric(float64(wr.measuredBound-1)/wr.lastBound.Sub(wr.firstBound).Seconds(), "measured-pods/s")
	}
	if wr.measuredSeen > 1 && wr.lastMeasured.After(wr.firstMeasured) {
		b.ReportMetric(float64(wr.measuredSeen-1)/wr.lastMeasured.Sub(wr.firstMeasured).Seconds(), "created-pods/s")
	}
	if wr.measuredBound == wr.want.measuredPods && !wr.firstMeasured.IsZero() {
		b.ReportMetric(wr.lastBound.Sub(wr.firstMeasured).Seconds(), "all-bound-s")
	}
	if c := wr.counters; c != nil {
		attempts := c.scheduled + c.unschedulable + c.errors
		b.ReportMetric(attempts/float64(wr.want.totalPods), "attempts/pod")
		b.ReportMetric(attempts-float64(wr.want.totalPods), "extra-attempts")
		b.ReportMetric(c.held, "held-pods")
		b.ReportMetric(c.releasedTimeout, "released-timeout")
		b.ReportMetric(c.failOpen, "fail-open")
		// Opportunistic batching: cycles that reused the previous cycle's scores.
		b.ReportMetric(c.batchHintUsed/float64(wr.want.totalPods), "batch-hint-used/pod")
		b.ReportMetric(c.batchAttempts/float64(wr.want.totalPods), "batch-attempts/pod")
	} else {
		b.Errorf("the scheduler's counters were not read: %d of %d pods were bound", wr.totalBound, wr.want.totalPods)
	}
	for name, r := range map[string]*registry{"warm": o.regs.warm, "cold": o.regs.cold, "outage": o.regs.outage} {
		images := wr.images[r.Host()].Len()
		if images == 0 {
			continue
		}
		reqs := r.Requests.All()[before[r]:]
		manifests := 0
		for _, q := range reqs {
			if strings.Contains(q.Path, "/manifests/") {
				manifests++
			}
		}
		b.ReportMetric(float64(len(reqs))/float64(images), name+"-req/image")
		b.ReportMetric(float64(manifests)/float64(images), name+"-manifest-req/image")
	}
}

// workloadRun is what the observer saw of one workload.
type workloadRun struct {
	want workload

	mu            sync.Mutex
	seen          sets.Set[types.UID]
	bound         sets.Set[types.UID]
	totalBound    int
	measuredSeen  int
	measuredBound int
	firstMeasured time.Time // creation of the first and last measured pod, as seen
	lastMeasured  time.Time
	firstBound    time.Time // first and last bind in the measured namespace
	lastBound     time.Time
	images        map[string]sets.Set[string] // registry host → images of the pods
	counters      *counters
	reading       bool
	done          chan struct{}
	stopOnce      sync.Once
}

func newWorkloadRun(w workload) *workloadRun {
	return &workloadRun{
		want:   w,
		seen:   sets.New[types.UID](),
		bound:  sets.New[types.UID](),
		images: map[string]sets.Set[string]{},
		done:   make(chan struct{}),
	}
}

func (wr *workloadRun) observe(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	wr.mu.Lock()
	defer wr.mu.Unlock()
	measured := pod.Namespace == wr.want.measuredNamespace
	if !wr.seen.Has(pod.UID) {
		wr.seen.Insert(pod.UID)
		if measured {
			if wr.firstMeasured.IsZero() {
				wr.firstMeasured = now
			}
			wr.lastMeasured = now
			wr.measuredSeen++
		}
	}
	for _, c := range pod.Spec.Containers {
		host, _, _ := strings.Cut(c.Image, "/")
		if wr.images[host] == nil {
			wr.images[host] = sets.New[string]()
		}
		wr.images[host].Insert(c.Image)
	}
	if pod.Spec.NodeName == "" || wr.bound.Has(pod.UID) {
		return
	}
	wr.bound.Insert(pod.UID)
	wr.totalBound++
	if measured {
		wr.measuredBound++
		if wr.firstBound.IsZero() {
			wr.firstBound = now
		}
		wr.lastBound = now
	}
	if wr.totalBound == wr.want.totalPods && !wr.reading {
		wr.reading = true
		go wr.readCounters()
	}
}

// readCounters reads the counters once the scheduler has counted every pod as
// scheduled (the bind the informer reports comes a moment before the metric).
func (wr *workloadRun) readCounters() {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := readCounters()
		if err == nil && (c.scheduled >= float64(wr.want.totalPods) || time.Now().After(deadline)) {
			wr.mu.Lock()
			wr.counters = c
			wr.mu.Unlock()
			return
		}
		select {
		case <-wr.done:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (wr *workloadRun) stop() {
	wr.stopOnce.Do(func() { close(wr.done) })
}

// counters are the scheduler's and ArchFilter's counters at the end of a workload.
type counters struct {
	scheduled, unschedulable, errors float64 // scheduler_schedule_attempts_total by result
	held, releasedTimeout, failOpen  float64
	batchAttempts, batchHintUsed     float64 // scheduler_batch_attempts_total: all, and result hint_used
}

func readCounters() (*counters, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, err
	}
	c := &counters{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			v := m.GetCounter().GetValue()
			switch f.GetName() {
			case "scheduler_schedule_attempts_total":
				if labels["profile"] != "default-scheduler" {
					continue
				}
				switch labels["result"] {
				case "scheduled":
					c.scheduled += v
				case "unschedulable":
					c.unschedulable += v
				case "error":
					c.errors += v
				}
			case "scheduler_batch_attempts_total":
				if labels["profile"] != "default-scheduler" {
					continue
				}
				c.batchAttempts += v
				if labels["result"] == "hint_used" {
					c.batchHintUsed += v
				}
			case "archfilter_pods_held_total":
				c.held += v
			case "archfilter_pods_released_total":
				if labels["reason"] == "timeout" {
					c.releasedTimeout += v
				}
			case "archfilter_fail_open_total":
				c.failOpen += v
			}
		}
	}
	return c, nil
}

// Package metrics holds the placement mode's metrics: pods gated by the
// webhook (or admitted ungated when no controller runs), how long they stayed gated, affinity written and pods released
// without affinity (fail-open); bound pods on a node that cannot run them, and
// their evictions (--misplaced).
package metrics

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const subsystem = "archfilter_placement"

// Outcomes of a gated pod, the values of GatedSeconds' outcome label.
const (
	OutcomeAffinityWritten = "affinity_written"
	OutcomeUnconstrained   = "unconstrained"
	OutcomeFailedOpen      = "failed_open"
	OutcomeRejected        = "rejected"
	OutcomeUnmergeable     = "unmergeable"
	OutcomeUninstalled     = "uninstalled"
)

// Results of an eviction of a misplaced pod, the values of MisplacedEvictions'
// result label.
const (
	EvictionEvicted = "evicted"
	EvictionBlocked = "blocked"
	EvictionFailed  = "failed"
)

var (
	// PodsGated counts pods the webhook added the gate to.
	PodsGated = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "pods_gated_total",
		Help:           "Pods the placement webhook added the archfilter.io/placement scheduling gate to.",
		StabilityLevel: metrics.ALPHA,
	})
	// NotGated counts in-scope pods admitted without the gate because no
	// placement controller was running to remove it.
	NotGated = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "pods_not_gated_total",
		Help:           "In-scope pods the placement webhook admitted without the gate because no placement controller was running (its Lease not renewed, or not started).",
		StabilityLevel: metrics.ALPHA,
	})
	// GatedSeconds observes the time from a pod's creation to its gate's removal.
	GatedSeconds = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      subsystem,
		Name:           "gated_seconds",
		Help:           "Time from a gated pod's creation to the removal of its archfilter.io/placement gate, by outcome.",
		Buckets:        metrics.ExponentialBuckets(0.01, 2, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"outcome"})
	// AffinityWritten counts pods whose node affinity the controller wrote.
	AffinityWritten = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "affinity_written_total",
		Help:           "Pods whose node affinity the placement controller wrote.",
		StabilityLevel: metrics.ALPHA,
	})
	// MaxGatedSeconds is --max-gated: alerts compare the gated time with it,
	// and its presence says a companion runs.
	MaxGatedSeconds = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      subsystem,
		Name:           "max_gated_seconds",
		Help:           "The companion's --max-gated: the longest a pod keeps the gate before the failure policy's outcome applies.",
		StabilityLevel: metrics.ALPHA,
	})
	// FailOpen counts pods released without added affinity, by reason.
	FailOpen = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "fail_open_total",
		Help:           "Pods whose gate was removed without added affinity, by reason (resolve_failed, max_gated, unmergeable, uninstalled).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
)

// The watch on bound pods (--misplaced report|evict).
var (
	// MisplacedPods is the number of bound pods found on a node that cannot
	// run them, by kind of finding.
	MisplacedPods = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      subsystem,
		Name:           "misplaced_pods",
		Help:           "Bound pods on a node that cannot run them, by kind of finding (node-cannot-run: the node's platform is not among their images'; exec-format-error: a container failed with exec format error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})
	// MisplacedEvictions counts evictions of misplaced pods, by result.
	MisplacedEvictions = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "misplaced_evictions_total",
		Help:           "Evictions of misplaced pods (--misplaced=evict), by result (evicted, blocked: a PodDisruptionBudget refused it for now, failed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	// MisplacedNotEvicted counts misplaced pods that eviction would not heal,
	// once per pod and reason.
	MisplacedNotEvicted = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: subsystem,
		Name:      "misplaced_not_evicted_total",
		Help: "Misplaced pods an eviction would not heal, once per pod, by reason (image-lies: exec format error on a platform its image claims; " +
			"no-node-for-replacement; running-image-unknown; no-platform-evidence; out-of-scope; daemonset; no-controller). Counted in both modes.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
)

var registerOnce sync.Once

// Register adds the metrics to the legacy registry, once.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(PodsGated, NotGated, GatedSeconds, AffinityWritten, FailOpen, MaxGatedSeconds, MisplacedPods, MisplacedEvictions, MisplacedNotEvicted)
	})
}

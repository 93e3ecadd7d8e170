package archfilter

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	k8sversion "k8s.io/component-base/version"

	"github.com/archfilter/archfilter/pkg/version"
)

const subsystem = "archfilter"

var (
	podsHeld = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "pods_held_total",
		Help:           "Pods held at PreEnqueue while their image platforms resolve.",
		StabilityLevel: metrics.ALPHA,
	})
	podsReleased = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "pods_released_total",
		Help:           "Held pods released, by reason: resolved, timeout (maxWait), deleted, or out_of_scope (an update opted the pod out or declared its platforms).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	podWaitSeconds = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      subsystem,
		Name:           "pod_wait_seconds",
		Help:           "How long pods were held before their image platforms were known.",
		Buckets:        metrics.ExponentialBuckets(0.01, 2, 14),
		StabilityLevel: metrics.ALPHA,
	})
	filterRejections = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "prefilter_rejections_total",
		Help:           "Scheduling cycles in which ArchFilter rejected a pod before Filter, by reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	nodeRejections = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "filter_node_rejections_total",
		Help:           "Nodes rejected by Filter because their platform does not run the pod's images.",
		StabilityLevel: metrics.ALPHA,
	})
	reserveRejections = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "reserve_rejections_total",
		Help:           "Pods whose Filter was skipped (their platforms include every platform of ArchFilter's node table) and whose chosen node, of a platform the table had not seen yet, Reserve rejected; each is retried.",
		StabilityLevel: metrics.ALPHA,
	})
	buildInfo = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      subsystem,
		Name:           "build_info",
		Help:           "Always 1, labelled with archfilter's version (with the flavour suffix, e.g. -k8s1.35) and the Kubernetes version it is built from.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"version", "kubernetes_version"})
	failOpen = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "fail_open_total",
		Help:           "Scheduling cycles in which unresolved images were ignored under failurePolicy Ignore.",
		StabilityLevel: metrics.ALPHA,
	})
)

var registerOnce sync.Once

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(podsHeld, podsReleased, podWaitSeconds, filterRejections, nodeRejections, reserveRejections, failOpen, buildInfo)
		buildInfo.WithLabelValues(version.Version, k8sversion.Get().GitVersion).Set(1)
	})
}

package transport

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// openCircuits has no host label on purpose: pod authors choose hosts, so a
// per-host series would be unbounded.
var openCircuits = metrics.NewGauge(&metrics.GaugeOpts{
	Subsystem:      "archfilter_resolver",
	Name:           "open_circuits",
	Help:           "Number of registry hosts whose circuit breaker is open or half-open.",
	StabilityLevel: metrics.ALPHA,
})

var registerOnce sync.Once

// RegisterMetrics registers the transport's metrics with the component-base
// legacy registry that kube-scheduler serves. New calls it; it is idempotent.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(openCircuits)
	})
}

package resolver

import (
	"net/http"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsSubsystem = "archfilter_resolver"

// Labels are all low-cardinality: no image names, hosts or credential sources.
var (
	resolutionDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "resolution_duration_seconds",
		Help:           "Time spent resolving one image on the network (fetches and revalidations), by result (success, failure).",
		Buckets:        metrics.ExponentialBuckets(0.005, 2, 12),
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})

	cacheHits = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "cache_hits_total",
		Help:           "Lookups answered from the cache, failures and stale answers included.",
		StabilityLevel: metrics.ALPHA,
	})

	staleServed = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "stale_served_total",
		Help:           "Lookups answered with an expired answer (within cache.staleWhileRevalidate) while a background revalidation refreshes it.",
		StabilityLevel: metrics.ALPHA,
	})

	cacheMisses = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "cache_misses_total",
		Help:           "Lookups the cache could not answer.",
		StabilityLevel: metrics.ALPHA,
	})

	cacheEntries = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "cache_entries",
		Help:           "Entries in the caches of every profile's resolver: tags, digests and failures, expired ones included until evicted.",
		StabilityLevel: metrics.ALPHA,
	})

	registryRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "registry_requests_total",
		Help:           "HTTP requests sent to registries, auth handshakes included, by method and status class (2xx, 3xx, 4xx, 5xx, error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"method", "status_class"})

	failures = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "failures_total",
		Help:           "Failed resolutions by reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})

	pending = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pending_resolutions",
		Help:           "Distinct images (per credential scope) queued or being resolved for ResolveAsync, over every profile's resolver.",
		StabilityLevel: metrics.ALPHA,
	})
)

var registerMetricsOnce sync.Once

// RegisterMetrics registers the resolver's metrics with the legacy registry that
// kube-scheduler serves. It is safe to call more than once; call it before the first
// resolver starts, since registration is not synchronised with measurement.
func RegisterMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.MustRegister(resolutionDuration, cacheHits, staleServed, cacheMisses, cacheEntries, registryRequests, failures, pending)
	})
}

// instrumentedTransport counts every request the resolver sends, beneath authentication,
// so pings, token requests and redirects count too.
type instrumentedTransport struct {
	next http.RoundTripper
}

func (t *instrumentedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	class := "error"
	if err == nil {
		switch {
		case resp.StatusCode >= 500:
			class = "5xx"
		case resp.StatusCode >= 400:
			class = "4xx"
		case resp.StatusCode >= 300:
			class = "3xx"
		default:
			class = "2xx"
		}
	}
	registryRequests.WithLabelValues(methodLabel(req.Method), class).Inc()
	return resp, err
}

func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost:
		return m
	}
	return "other"
}

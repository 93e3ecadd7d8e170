package archfilter

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/resolver"
)

func TestLeads(t *testing.T) {
	family := func(name string, values ...float64) *dto.MetricFamily {
		f := &dto.MetricFamily{Name: ptr.To(name)}
		for _, v := range values {
			f.Metric = append(f.Metric, &dto.Metric{Gauge: &dto.Gauge{Value: ptr.To(v)}})
		}
		return f
	}
	for _, tc := range []struct {
		name     string
		families []*dto.MetricFamily
		want     bool
	}{
		{name: "no leader election", families: []*dto.MetricFamily{family("other", 0)}, want: true},
		{name: "standby", families: []*dto.MetricFamily{family(leaderGauge, 0)}},
		{name: "leader", families: []*dto.MetricFamily{family(leaderGauge, 1)}, want: true},
		{name: "a lease of its own among others", families: []*dto.MetricFamily{family(leaderGauge, 0, 1)}, want: true},
	} {
		if got := leads(tc.families); got != tc.want {
			t.Errorf("%s: leads = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLeadershipFollowsTheGauge reads a registry as the process's is read.
func TestLeadershipFollowsTheGauge(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	gauge := metrics.NewGaugeVec(&metrics.GaugeOpts{Name: leaderGauge, Help: "test"}, []string{"name"})
	reg.MustRegister(gauge)
	l := newLeadership(reg.Gather)
	if !l.Leading() {
		t.Error("no series yet (no leader election): want leading")
	}
	gauge.WithLabelValues("kube-scheduler").Set(0)
	l.refresh()
	if l.Leading() {
		t.Error("gauge 0: want standby")
	}
	gauge.WithLabelValues("kube-scheduler").Set(1)
	l.refresh()
	if !l.Leading() {
		t.Error("gauge 1: want leading")
	}
}

// TestStandbyResolvesButDoesNotWrite: a standby's PreEnqueue holds and resolves
// pending pods as the leader's does (its cache is warm when it takes over), but it
// records no event.
func TestStandbyResolvesButDoesNotWrite(t *testing.T) {
	for _, standby := range []bool{true, false} {
		ctx := testContext(t)
		h := newHarness(t, ctx, harnessConfig{standby: standby})
		pod := makePod("p", imgNewMain).Annotation(annotations.Skip, "yes").Obj()
		if got := statusOf(h.preEnqueue(ctx, pod)); got != waiting() {
			t.Errorf("standby %v: PreEnqueue = %+v, want the pod held", standby, got)
		}
		if got := h.res.asyncCalls(); len(got) != 1 {
			t.Errorf("standby %v: resolutions started: %v, want one", standby, got)
		}
		h.res.complete(imgNewMain, resolver.Result{Platforms: mustSet(t, "linux/arm64")})
		evs := h.events()
		if standby && len(evs) != 0 {
			t.Errorf("a standby recorded events: %v", evs)
		}
		if !standby && (len(withReason(evs, EventInvalidAnnotation)) != 1 || len(withReason(evs, EventResolved)) != 1) {
			t.Errorf("the leader recorded %v, want %s and %s", evs, EventInvalidAnnotation, EventResolved)
		}
	}
}

package archfilter

import (
	"context"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// leaderGauge is client-go's leader election gauge
// (k8s.io/component-base/metrics/prometheus/clientgo/leaderelection, which
// kube-scheduler links): 1 while this process holds its lease, 0 while it
// waits for it.
const leaderGauge = "leader_election_master_status"

// leadershipInterval is how often leadership is read.
const leadershipInterval = time.Second

// leadership says whether this scheduler process leads. kube-scheduler starts
// a standby's informers and plugins before it leads, and its scheduling queue
// runs PreEnqueue for every pending pod, so a standby's ArchFilter resolves the
// images of pending pods as the leader's does: a hot standby, whose cache is
// warm when it takes over. But a standby must not write to the cluster, and no
// API tells a plugin whether its process leads; the leader election gauge is
// the one signal it can read. It is read in the background: the event paths
// that ask (PreEnqueue among them, under the queue's lock) only load a bool.
// A process without the gauge (leader election off) leads.
type leadership struct {
	gather  func() ([]*dto.MetricFamily, error)
	leading atomic.Bool
}

func newLeadership(gather func() ([]*dto.MetricFamily, error)) *leadership {
	l := &leadership{gather: gather}
	l.refresh()
	return l
}

// processLeadership reads the process's legacy registry, where kube-scheduler's
// leader election reports.
func processLeadership() *leadership {
	return newLeadership(legacyregistry.DefaultGatherer.Gather)
}

// Leading reports whether the process held its lease when last read.
func (l *leadership) Leading() bool { return l.leading.Load() }

// run reads leadership every interval until ctx is done.
func (l *leadership) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.refresh()
		}
	}
}

func (l *leadership) refresh() {
	families, err := l.gather()
	if err != nil {
		// A collector failed: keep the last answer.
		return
	}
	l.leading.Store(leads(families))
}

// leads reports whether families say this process leads: a series of the
// leader gauge at 1, or no series at all (no leader election).
func leads(families []*dto.MetricFamily) bool {
	for _, f := range families {
		if f.GetName() != leaderGauge {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetGauge().GetValue() == 1 {
				return true
			}
		}
		return len(f.GetMetric()) == 0
	}
	return true
}

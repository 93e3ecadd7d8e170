package archfilter

import (
	"sync/atomic"

	fwk "k8s.io/kube-scheduler/framework"
)

// rejectionChunk is how many Filter rejections share one allocation.
const rejectionChunk = 64

// rejections hands out Filter's rejection statuses for one scheduling cycle, all
// with the cycle's one reason (PreFilter builds it).
//
// The framework needs a distinct *Status per rejected node: it calls SetPlugin
// on each (from the goroutines that run Filter in parallel) and keeps them per
// node for the pod's diagnosis, so one shared status would be a data race.
// What it does not need is one allocation per status: statuses come from
// chunks of rejectionChunk, taken without a lock, and all share the reasons
// slice (read-only; AppendReason on a full slice copies it). A chunk stays
// alive while the framework holds any of its statuses: for one pod's
// diagnosis, until the pod's next cycle.
type rejections struct {
	proto fwk.Status
	cur   atomic.Pointer[statusChunk]
}

type statusChunk struct {
	next     atomic.Int32
	statuses [rejectionChunk]fwk.Status
}

func newRejections(reason string) *rejections {
	return &rejections{proto: *fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)}
}

// status returns a fresh copy of the rejection status.
func (r *rejections) status() *fwk.Status {
	for {
		c := r.cur.Load()
		if c != nil {
			if i := c.next.Add(1) - 1; i < rejectionChunk {
				s := &c.statuses[i]
				*s = r.proto
				return s
			}
		}
		// Empty or used up: install a new chunk unless another goroutine did.
		r.cur.CompareAndSwap(c, &statusChunk{})
	}
}

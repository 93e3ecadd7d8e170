package archfilter

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	fwk "k8s.io/kube-scheduler/framework"
)

// Every rejection is a status of its own, across chunks and goroutines (the
// framework sets the plugin name on each), with the cycle's code and reason.
func TestRejectionsAreDistinct(t *testing.T) {
	const goroutines, each = 8, 3 * rejectionChunk
	r := newRejections("node(s) didn't match")
	got := make([][]*fwk.Status, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				s := r.status()
				s.SetPlugin(Name) // as RunFilterPlugins does, concurrently
				got[g] = append(got[g], s)
			}
		})
	}
	wg.Wait()

	seen := map[*fwk.Status]bool{}
	for _, ss := range got {
		for _, s := range ss {
			if seen[s] {
				t.Fatalf("status %p handed out twice", s)
			}
			seen[s] = true
			if s.Code() != fwk.UnschedulableAndUnresolvable || s.Plugin() != Name {
				t.Fatalf("status %v from plugin %q", s.Code(), s.Plugin())
			}
			if diff := cmp.Diff([]string{"node(s) didn't match"}, s.Reasons()); diff != "" {
				t.Fatalf("reasons (-want,+got):\n%s", diff)
			}
		}
	}
	if len(seen) != goroutines*each {
		t.Errorf("%d distinct statuses, want %d", len(seen), goroutines*each)
	}
}

// A reason appended to one status (as the framework may do) shows up in no other.
func TestRejectionsDoNotShareAppends(t *testing.T) {
	r := newRejections("a")
	first, second := r.status(), r.status()
	first.AppendReason("b")
	if diff := cmp.Diff([]string{"a"}, second.Reasons()); diff != "" {
		t.Errorf("second status's reasons (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, first.Reasons()); diff != "" {
		t.Errorf("first status's reasons (-want,+got):\n%s", diff)
	}
}

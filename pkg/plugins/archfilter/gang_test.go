package archfilter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/pkg/resolver"
)

// TestGangReleasedTogether: a member of a gang whose images are known waits at
// PreEnqueue while another member's images resolve, and both are activated
// together when they have, so none waits in Permit (holding its node) for a
// member ArchFilter still holds. A pod outside the gang is not held for it.
func TestGangReleasedTogether(t *testing.T) {
	ctx := testContext(t)
	known := makePod("known", imgMulti).Label(coschedulingLabel, "g").Obj()
	slow := makePod("slow", imgNewMain).Label(coschedulingLabel, "g").Obj()
	other := makePod("other", imgMulti).Label(coschedulingLabel, "h").Obj()
	alone := makePod("alone", imgMulti).Obj()
	h := newHarness(t, ctx, harnessConfig{objects: []runtime.Object{known.DeepCopy(), slow.DeepCopy(), other.DeepCopy(), alone.DeepCopy()}})
	h.poll(ctx, "the gang index to hold the pods", func() bool { return len(h.pl.gangs.members("default/g", known)) == 1 })

	if got := statusOf(h.preEnqueue(ctx, slow)); got != waiting() {
		t.Errorf("PreEnqueue(slow) = %+v, want it held while its image resolves", got)
	}
	wantGang := want(fwk.UnschedulableAndUnresolvable, ReasonWaitingForGang)
	if diff := cmp.Diff(wantGang, statusOf(h.preEnqueue(ctx, known))); diff != "" {
		t.Errorf("PreEnqueue(known) while its gang-mate resolves (-want,+got):\n%s", diff)
	}
	for _, p := range []*v1.Pod{other, alone} {
		if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, p))); diff != "" {
			t.Errorf("PreEnqueue(%s), not of that gang (-want,+got):\n%s", p.Name, diff)
		}
	}

	h.res.complete(imgNewMain, resolver.Result{Platforms: mustSet(t, "linux/arm64")})
	h.poll(ctx, "both members activated", func() bool {
		return h.act.activations("default/slow") > 0 && h.act.activations("default/known") > 0
	})
	for _, p := range []*v1.Pod{slow, known} {
		if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, p))); diff != "" {
			t.Errorf("PreEnqueue(%s) once the gang resolved (-want,+got):\n%s", p.Name, diff)
		}
	}
	if n := h.act.activations("default/other"); n != 0 {
		t.Errorf("a pod of another gang was activated %d times", n)
	}
}

// TestGangWaitIsBounded: maxWait bounds the wait for a gang-mate too.
func TestGangWaitIsBounded(t *testing.T) {
	ctx := testContext(t)
	known := makePod("known", imgMulti).Label(coschedulingLabel, "g").Obj()
	slow := makePod("slow", imgNewMain).Label(coschedulingLabel, "g").Obj()
	h := newHarness(t, ctx, harnessConfig{objects: []runtime.Object{known.DeepCopy(), slow.DeepCopy()}})
	h.poll(ctx, "the gang index to hold the pods", func() bool { return len(h.pl.gangs.members("default/g", known)) == 1 })
	h.preEnqueue(ctx, slow)
	if got := statusOf(h.preEnqueue(ctx, known)); got.Message != ReasonWaitingForGang {
		t.Fatalf("PreEnqueue(known) = %+v, want held for its gang", got)
	}
	h.clock.Step(h.pl.settings.MaxWait)
	h.poll(ctx, "the member activated at maxWait", func() bool { return h.act.activations("default/known") > 0 })
	if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, known))); diff != "" {
		t.Errorf("PreEnqueue(known) after maxWait (-want,+got):\n%s", diff)
	}
}

// TestGangResolvesGatedMembers: a gang-mate still carrying another scheduling
// gate may never have reached ArchFilter's PreEnqueue (a configuration that
// runs SchedulingGates first), so a member waiting for it has its images
// resolved, and is activated when they are.
func TestGangResolvesGatedMembers(t *testing.T) {
	ctx := testContext(t)
	known := makePod("known", imgMulti).Label(coschedulingLabel, "g").Obj()
	gated := makePod("gated", imgNewMain).Label(coschedulingLabel, "g").SchedulingGates([]string{"example.com/hold"}).Obj()
	h := newHarness(t, ctx, harnessConfig{objects: []runtime.Object{known.DeepCopy(), gated.DeepCopy()}})
	h.poll(ctx, "the gang index to hold the pods", func() bool { return len(h.pl.gangs.members("default/g", known)) == 1 })
	if got := statusOf(h.preEnqueue(ctx, known)); got.Message != ReasonWaitingForGang {
		t.Fatalf("PreEnqueue(known) = %+v, want held for its gang", got)
	}
	if got := h.res.asyncCalls(); len(got) != 1 || got[0] != imgNewMain {
		t.Fatalf("resolutions started: %v, want the gated member's image", got)
	}
	h.res.complete(imgNewMain, resolver.Result{Platforms: mustSet(t, "linux/arm64")})
	h.poll(ctx, "the waiting member activated", func() bool { return h.act.activations("default/known") > 0 })
	if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, known))); diff != "" {
		t.Errorf("PreEnqueue(known) once its gang-mate's image resolved (-want,+got):\n%s", diff)
	}
}

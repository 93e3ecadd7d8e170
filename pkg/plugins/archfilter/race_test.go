//go:build race

package archfilter

// Tests here look for data races: they run in the race detector's run
// (make test-race, in CI), where a race fails them, and not in the others,
// where they would pass whatever the code does.

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// TestHeldPodsExpireRacesWithPreEnqueue runs the maxWait timer (real clock)
// against PreEnqueue calls for the same pod, as a pod update and the timer do
// in a scheduler.
func TestHeldPodsExpireRacesWithPreEnqueue(t *testing.T) {
	ctx := testContext(t)
	res := newFakeResolver(t, clock.RealClock{}, map[string]resolver.Result{})
	act := &fakeActivator{}
	h := newHeldPods(clock.RealClock{}, func(pods map[string]*v1.Pod) { act.Activate(klog.Logger{}, pods) })
	settings := &decision.Settings{MaxWait: time.Millisecond, Fallback: mustSet(t, "*")}
	pl := &ArchFilter{
		settings:    settings,
		scope:       newScope(settings),
		resolver:    res,
		credentials: &fakeCredentials{},
		held:        h,
		events:      podEvents{recorder: &events.FakeRecorder{}},
	}
	pod := makePod("p", imgNewMain).Obj()
	deadline := time.Now().Add(5 * time.Second)
	for act.activations("default/p") < 20 && time.Now().Before(deadline) {
		pl.PreEnqueue(ctx, pod)
	}
	if act.activations("default/p") == 0 {
		t.Fatal("the maxWait timer never fired")
	}
	h.stop()
}

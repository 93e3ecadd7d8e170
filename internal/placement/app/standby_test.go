package app

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

// TestHotStandbyOrder: the standby's warm-up runs from the start until the
// replica leads, and the controller starts only once the warm-up has
// returned: the two never run at once.
func TestHotStandbyOrder(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var warming, warmedBeforeLead atomic.Bool
	started := make(chan struct{})
	warm := func(ctx context.Context) error {
		warming.Store(true)
		close(started)
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // a worker finishing its pod
		warming.Store(false)
		return nil
	}
	lead := func(context.Context) error {
		warmedBeforeLead.Store(!warming.Load())
		return errors.New("led")
	}
	run := hotStandby(ctx, warm, lead)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the standby's warm-up did not start before leading")
	}
	if err := run(ctx); err == nil || err.Error() != "led" {
		t.Fatalf("lead returned %v, want its own error", err)
	}
	if !warmedBeforeLead.Load() {
		t.Error("the controller started while the standby's warm-up still ran")
	}
}

package app

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestControllerLiveness(t *testing.T) {
	start := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	renew := func(d time.Duration) *metav1.MicroTime { return ptr.To(metav1.NewMicroTime(start.Add(d))) }
	type read struct {
		after  time.Duration // since start, on the webhook's clock
		holder string
		renew  *metav1.MicroTime
		err    error
	}
	for _, tc := range []struct {
		name        string
		local       bool
		reads       []read
		now         time.Duration
		wantRunning bool
		wantWhy     string // substring
	}{
		{name: "this process's controller runs", local: true, wantRunning: true},
		{name: "never read", wantWhy: "no holder"},
		{name: "Lease without holder", reads: []read{{}}, wantWhy: "no holder"},
		{
			name:        "holder renewing",
			reads:       []read{{holder: "a", renew: renew(0)}, {after: 10 * time.Second, holder: "a", renew: renew(10 * time.Second)}, {after: 20 * time.Second, holder: "a", renew: renew(20 * time.Second)}},
			now:         30 * time.Second,
			wantRunning: true,
		},
		{
			// The holder's clock may be far off: only a change of renewTime
			// counts, timed on this process's clock.
			name:        "holder renewing with a skewed clock",
			reads:       []read{{holder: "a", renew: renew(-time.Hour)}, {after: 10 * time.Second, holder: "a", renew: renew(-time.Hour + 10*time.Second)}},
			now:         20 * time.Second,
			wantRunning: true,
		},
		{
			name:    "holder stopped renewing",
			reads:   []read{{holder: "a", renew: renew(0)}, {after: 10 * time.Second, holder: "a", renew: renew(0)}},
			now:     16 * time.Second,
			wantWhy: `held by a was not renewed for 16s`,
		},
		{
			// A leader that stops releases the Lease (client-go: no holder,
			// a renewTime, a duration of 1s): a standby takes it within
			// seconds, so pods are still gated meanwhile.
			name:        "released by a leader that stopped",
			reads:       []read{{holder: "a", renew: renew(0)}, {after: 10 * time.Second, renew: renew(10 * time.Second)}},
			now:         20 * time.Second,
			wantRunning: true,
		},
		{
			name:    "released, and no replica took it",
			reads:   []read{{holder: "a", renew: renew(0)}, {after: 10 * time.Second, renew: renew(10 * time.Second)}},
			now:     26 * time.Second,
			wantWhy: "the Lease was released 16s ago and no replica took it",
		},
		{
			name:        "new holder took over",
			reads:       []read{{holder: "a", renew: renew(0)}, {after: 20 * time.Second, holder: "b", renew: renew(0)}},
			now:         25 * time.Second,
			wantRunning: true,
		},
		{
			// One failed read does not let pods through while the holder renews.
			name:        "Lease unreadable once",
			reads:       []read{{holder: "a", renew: renew(0)}, {after: time.Second, err: errors.New("etcdserver: request timed out")}},
			now:         2 * time.Second,
			wantRunning: true,
		},
		{
			name:    "Lease unreadable for its duration",
			reads:   []read{{holder: "a", renew: renew(0)}, {after: time.Second, err: errors.New(`leases.coordination.k8s.io "archfilter-placement" is forbidden`)}},
			now:     16 * time.Second,
			wantWhy: `not renewed for 16s; reading the Lease: leases.coordination.k8s.io "archfilter-placement" is forbidden`,
		},
		{
			name:    "Lease never readable",
			reads:   []read{{err: errors.New(`leases.coordination.k8s.io "archfilter-placement" is forbidden`)}},
			wantWhy: "the Lease has no holder; reading the Lease: leases.coordination.k8s.io",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakePassiveClock(start)
			l := newControllerLiveness(clk)
			l.local.Store(tc.local)
			for _, r := range tc.reads {
				clk.SetTime(start.Add(r.after))
				l.observeLease(r.holder, r.renew, 15*time.Second, r.err)
			}
			clk.SetTime(start.Add(tc.now))
			running, why := l.running()
			if running != tc.wantRunning || !strings.Contains(why, tc.wantWhy) {
				t.Errorf("running() = %v, %q; want %v, containing %q", running, why, tc.wantRunning, tc.wantWhy)
			}
		})
	}
}

// TestWrapMarksTheControllerRunning: the webhook gates pods only while the
// wrapped controller runs.
func TestWrapMarksTheControllerRunning(t *testing.T) {
	l := newControllerLiveness(testingclock.NewFakePassiveClock(time.Now()))
	inside := make(chan bool, 1)
	err := l.wrap(func(context.Context) error {
		running, _ := l.running()
		inside <- running
		return errors.New("stopped")
	})(context.Background())
	if err == nil || err.Error() != "stopped" {
		t.Errorf("wrap returned %v, want the controller's error", err)
	}
	if !<-inside {
		t.Error("not running while the controller ran")
	}
	if running, _ := l.running(); running {
		t.Error("still running after the controller returned")
	}
}

// TestWatchLease reads a real Lease object through a clientset.
func TestWatchLease(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := fake.NewClientset()
	l := newControllerLiveness(testingclock.NewFakePassiveClock(time.Now()))
	go l.watchLease(ctx, client, "kube-system", "archfilter-placement", 15*time.Second, 10*time.Millisecond)

	waitFor := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			running, why := l.running()
			if running == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("running() = %v (%s), want %v", running, why, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(false) // no Lease yet
	_, err := client.CoordinationV1().Leases("kube-system").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "archfilter-placement"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("replica-a"),
			LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime:            ptr.To(metav1.NowMicro()),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(true)
	if err := client.CoordinationV1().Leases("kube-system").Delete(ctx, "archfilter-placement", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(false)
}

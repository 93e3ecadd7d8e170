package app

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// controllerLiveness tells the webhook whether a placement controller is
// running, so that it only gates pods something will ungate: a webhook that
// answers while no controller runs (the Lease never acquired, the controller
// stopped) would otherwise leave every new pod gated until someone notices.
//
// A controller runs in this process (local), or, with --leader-elect, in the
// replica that holds the Lease: the Lease counts as held while its renewTime
// keeps changing, measured on this process's clock as client-go's leader
// election does, so clock skew between nodes does not matter. A Lease its
// leader released counts as held for one lease duration: a standby takes it
// within its retry period.
type controllerLiveness struct {
	clock clock.PassiveClock
	local atomic.Bool

	mu sync.Mutex
	// lastRenew is the Lease's renewTime and holder as last read, observed
	// when they were first seen; leaseDuration is the holder's own.
	lastRenew     *metav1.MicroTime
	lastHolder    string
	observed      time.Time
	leaseDuration time.Duration
	leaseErr      error
}

func newControllerLiveness(c clock.PassiveClock) *controllerLiveness {
	return &controllerLiveness{clock: c}
}

// wrap marks the local controller running while run runs.
func (l *controllerLiveness) wrap(run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		l.local.Store(true)
		defer l.local.Store(false)
		return run(ctx)
	}
}

// running answers the webhook: whether a controller runs, and if not, why.
func (l *controllerLiveness) running() (bool, string) {
	if l.local.Load() {
		return true, ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// A read that fails keeps the last answer: one failed GET must not let
	// pods through ungated while the holder is renewing. The answer ages out
	// after the Lease's duration like a Lease that is not renewed.
	why := ""
	switch {
	case l.lastRenew == nil:
		why = "the Lease has no holder"
	case l.lastHolder == "":
		// Released: a leader that stops (a rollout, a drain, helm upgrade)
		// gives the Lease up, and a standby, which retries every
		// leaseRetryPeriod, takes it within seconds. Pods gated meanwhile
		// are the successor's; only a Lease that stays free for a whole
		// lease duration means that no replica is left to take it.
		if l.clock.Since(l.observed) <= leaseDuration {
			return true, ""
		}
		why = "the Lease was released " + l.clock.Since(l.observed).Round(time.Second).String() + " ago and no replica took it"
	case l.clock.Since(l.observed) > l.leaseDuration:
		why = "the Lease held by " + l.lastHolder + " was not renewed for " + l.clock.Since(l.observed).Round(time.Second).String()
	default:
		return true, ""
	}
	if l.leaseErr != nil {
		why += "; reading the Lease: " + l.leaseErr.Error()
	}
	return false, why
}

// observeLease records one read of the Lease (or the error reading it).
func (l *controllerLiveness) observeLease(holder string, renew *metav1.MicroTime, duration time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaseErr = err
	if err != nil {
		return // keep the last answer (see running)
	}
	if holder != l.lastHolder || !equality.Semantic.DeepEqual(renew, l.lastRenew) {
		l.observed = l.clock.Now()
	}
	l.lastHolder, l.lastRenew, l.leaseDuration = holder, renew, duration
}

// watchLease reads the Lease every period until ctx is done.
func (l *controllerLiveness) watchLease(ctx context.Context, client kubernetes.Interface, namespace, name string, fallbackDuration, period time.Duration) {
	logger := klog.FromContext(ctx)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		lease, err := client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			l.observeLease("", nil, 0, nil)
			return
		}
		if err != nil {
			logger.V(2).Info("Reading the placement controller's Lease", "lease", klog.KRef(namespace, name), "err", err)
			l.observeLease("", nil, 0, err)
			return
		}
		holder, duration := "", fallbackDuration
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		if lease.Spec.LeaseDurationSeconds != nil {
			duration = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
		}
		l.observeLease(holder, lease.Spec.RenewTime, duration, nil)
	}, period)
}

// Package scheduleruninstall is what removing archfilter-scheduler checks
// and cleans up before its objects are deleted: pods that still name it (they
// would stay Pending for ever), or, where it serves the default profile, a
// scheduler taking over; then it stops the scheduler's Deployment and deletes
// its leader-election Lease. The Helm chart's pre-delete hook runs it as
// `archfilter-scheduler pre-uninstall`.
package scheduleruninstall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// DefaultProfile is the schedulerName of a pod that names no scheduler.
const DefaultProfile = corev1.DefaultSchedulerName

// Options say which scheduler is removed and how.
type Options struct {
	// SchedulerName is the profile's schedulerName.
	SchedulerName string
	// Namespace and Deployment name the scheduler's Deployment, stopped
	// (scaled to zero, its pods gone) before the Lease is deleted or handed
	// over; an empty Deployment stops nothing.
	Namespace, Deployment string
	// LeaseNamespace and LeaseName name its leader-election Lease; empty: it
	// runs without leader election.
	LeaseNamespace, LeaseName string
	// LeaseShared: the Lease is shared with another scheduler of the same
	// profile (the chart's replacement mode takes kube-system/kube-scheduler,
	// the control plane's). It is kept, and for the default profile that
	// scheduler must take it over.
	LeaseShared bool
	// Force turns every refusal into a warning.
	Force bool
	// HowToForce is appended to a refusal: how the caller (the chart) sets Force.
	HowToForce string
	// StopTimeout bounds the wait for the Deployment's pods to go,
	// TakeoverTimeout the wait for another scheduler to take the Lease, and
	// PollInterval is how often both look.
	StopTimeout, TakeoverTimeout, PollInterval time.Duration
	// Out receives what is done and every warning.
	Out io.Writer
}

// Defaults for Options' durations.
const (
	DefaultStopTimeout     = 2 * time.Minute
	DefaultTakeoverTimeout = time.Minute
	DefaultPollInterval    = time.Second
)

// shownPods is how many pods a refusal names.
const shownPods = 5

// Run checks that the scheduler can go, then stops its Deployment and
// deletes its Lease (unless shared). A scheduler of another profile is
// refused while pods name it. The default profile's pods need another
// scheduler instead: Run stops this one and waits for one to take the shared
// Lease over; if none does, it scales the Deployment back and refuses.
// Every refusal names what to do; with Force it is a warning and Run goes on.
func Run(ctx context.Context, client kubernetes.Interface, o Options) error {
	if o.SchedulerName == "" {
		return errors.New("--scheduler-name is required")
	}
	o.defaults()
	if o.SchedulerName == DefaultProfile {
		return o.handOver(ctx, client)
	}
	pods, err := podsNaming(ctx, client, o.SchedulerName)
	if err != nil {
		return err
	}
	if len(pods) > 0 {
		if err := o.refuse(stillNamed(o.SchedulerName, pods)); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(o.Out, "No pod names spec.schedulerName %s.\n", o.SchedulerName)
	}
	if _, err := o.stop(ctx, client); err != nil {
		return err
	}
	return o.deleteLease(ctx, client)
}

func (o *Options) defaults() {
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.TakeoverTimeout <= 0 {
		o.TakeoverTimeout = DefaultTakeoverTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
}

// refuse returns why the scheduler must not go, with how to force it, or,
// with Force, prints it as a warning and returns nil.
func (o *Options) refuse(why string) error {
	if o.Force {
		fmt.Fprintf(o.Out, "Warning: %s (forced: going on).\n", why)
		return nil
	}
	if o.HowToForce != "" {
		why += ". " + o.HowToForce
	}
	return errors.New(why)
}

// podsNaming lists the pods not yet finished that name schedulerName (and are
// not being deleted), page by page.
func podsNaming(ctx context.Context, client kubernetes.Interface, schedulerName string) ([]corev1.Pod, error) {
	selector := fields.AndSelectors(
		fields.OneTermEqualSelector("spec.schedulerName", schedulerName),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	).String()
	var pods []corev1.Pod
	opts := metav1.ListOptions{FieldSelector: selector, Limit: 500}
	for {
		list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the pods that name spec.schedulerName %s: %w", schedulerName, err)
		}
		for _, p := range list.Items {
			// The field selector again: not every client honours it.
			if p.Spec.SchedulerName != schedulerName || p.DeletionTimestamp != nil ||
				p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			pods = append(pods, p)
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return pods, nil
}

// stillNamed says which pods still name the scheduler and what becomes of them.
func stillNamed(schedulerName string, pods []corev1.Pod) string {
	phases := map[corev1.PodPhase]int{}
	var shown []string
	for i, p := range pods {
		phase := p.Status.Phase
		if phase == "" {
			phase = corev1.PodPending
		}
		phases[phase]++
		if i < shownPods {
			shown = append(shown, fmt.Sprintf("%s/%s (%s)", p.Namespace, p.Name, phase))
		}
	}
	var counts []string
	for _, ph := range []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodUnknown} {
		if n := phases[ph]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, ph))
		}
	}
	list := strings.Join(shown, ", ")
	if more := len(pods) - len(shown); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("%d pod(s) still name spec.schedulerName %s (%s): %s; once the scheduler is gone they, and the pods "+
		"their controllers create, stay Pending, since no other scheduler takes them. Move their workloads to another scheduler "+
		"(or delete them) first; list them with: kubectl get pods -A --field-selector spec.schedulerName=%s",
		len(pods), schedulerName, strings.Join(counts, ", "), list, schedulerName)
}

// handOver is Run for the default profile: every pod that names no scheduler
// needs one, so another scheduler must take the shared Lease over once this
// one is stopped.
func (o *Options) handOver(ctx context.Context, client kubernetes.Interface) error {
	if o.LeaseName == "" || !o.LeaseShared {
		err := o.refuse(fmt.Sprintf("this scheduler serves %s, the profile of every pod that names no scheduler, and without a leader-election "+
			"Lease shared with another scheduler of that profile there is no telling whether one takes over once it is gone", DefaultProfile))
		if err != nil {
			return err
		}
		_, err = o.stop(ctx, client)
		return err
	}
	replicas, err := o.stop(ctx, client)
	if err != nil {
		return err
	}
	lease := o.LeaseNamespace + "/" + o.LeaseName
	fmt.Fprintf(o.Out, "Waiting up to %s for another scheduler to take the Lease %s over.\n", o.TakeoverTimeout, lease)
	holder, err := o.waitForTakeover(ctx, client, replicas.ours)
	if err == nil {
		fmt.Fprintf(o.Out, "%s holds the Lease %s and renews it: %s is served; the Lease is kept.\n", holder, lease, DefaultProfile)
		return nil
	}
	why := fmt.Sprintf("no other scheduler took the Lease %s over within %s after this one stopped (%v): nothing would schedule the pods "+
		"that name no scheduler (%s). Start the control plane's kube-scheduler again first (docs/install.md, \"Uninstall\")",
		lease, o.TakeoverTimeout, err, DefaultProfile)
	if o.Force {
		return o.refuse(why)
	}
	if replicas.found {
		if err := o.scale(ctx, client, replicas.count); err != nil {
			why += fmt.Sprintf(". Scaling Deployment %s/%s back to %d replica(s) failed too: %v", o.Namespace, o.Deployment, replicas.count, err)
		} else {
			why += fmt.Sprintf(". Deployment %s/%s is scaled back to %d replica(s)", o.Namespace, o.Deployment, replicas.count)
		}
	}
	return o.refuse(why)
}

// waitForTakeover waits until a holder that is none of ours (pod names:
// kube-scheduler's identity is its host name, then "_") holds the Lease and
// renews it: a renewal seen proves it alive, whatever the clocks say.
func (o *Options) waitForTakeover(ctx context.Context, client kubernetes.Interface, ours []string) (string, error) {
	var holder string
	var seen *metav1.MicroTime
	lastState := "the Lease does not exist"
	err := wait.PollUntilContextTimeout(ctx, o.PollInterval, o.TakeoverTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoordinationV1().Leases(o.LeaseNamespace).Get(ctx, o.LeaseName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			lastState = "the Lease does not exist"
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading Lease %s/%s: %w", o.LeaseNamespace, o.LeaseName, err)
		}
		h := ptrString(l.Spec.HolderIdentity)
		switch {
		case h == "":
			lastState = "the Lease is held by none"
			holder, seen = "", nil
			return false, nil
		case isOurs(h, ours):
			lastState = "the Lease is still held by " + h + ", a pod of this scheduler"
			holder, seen = "", nil
			return false, nil
		}
		renew := l.Spec.RenewTime
		if h == holder && seen != nil && renew != nil && !renew.Equal(seen) {
			return true, nil
		}
		holder, seen = h, renew
		lastState = "held by " + h + ", not yet seen renewing it"
		return false, nil
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || wait.Interrupted(err) {
			return "", errors.New(lastState)
		}
		return "", err
	}
	return holder, nil
}

func isOurs(holder string, ours []string) bool {
	for _, pod := range ours {
		if holder == pod || strings.HasPrefix(holder, pod+"_") {
			return true
		}
	}
	return false
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// stopped is what stop found: whether the Deployment exists, its replicas
// before, and the names of its pods.
type stopped struct {
	found bool
	count int32
	ours  []string
}

// stop scales the Deployment to zero and waits until none of its pods is
// left, so that nothing renews the Lease after it is deleted or handed over.
// A missing Deployment is already stopped.
func (o *Options) stop(ctx context.Context, client kubernetes.Interface) (stopped, error) {
	var s stopped
	if o.Deployment == "" {
		return s, nil
	}
	deployments := client.AppsV1().Deployments(o.Namespace)
	d, err := deployments.Get(ctx, o.Deployment, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		fmt.Fprintf(o.Out, "Deployment %s/%s does not exist: nothing to stop.\n", o.Namespace, o.Deployment)
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("reading Deployment %s/%s: %w", o.Namespace, o.Deployment, err)
	}
	s.found, s.count = true, 1
	if d.Spec.Replicas != nil {
		s.count = *d.Spec.Replicas
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return s, fmt.Errorf("the selector of Deployment %s/%s: %w", o.Namespace, o.Deployment, err)
	}
	list := func(ctx context.Context) ([]string, error) {
		pods, err := client.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return nil, fmt.Errorf("listing the pods of Deployment %s/%s: %w", o.Namespace, o.Deployment, err)
		}
		names := make([]string, 0, len(pods.Items))
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names, nil
	}
	if s.ours, err = list(ctx); err != nil {
		return s, err
	}
	if err := o.scale(ctx, client, 0); err != nil {
		return s, err
	}
	fmt.Fprintf(o.Out, "Deployment %s/%s scaled to zero (from %d); waiting for its pods to go.\n", o.Namespace, o.Deployment, s.count)
	var left []string
	err = wait.PollUntilContextTimeout(ctx, o.PollInterval, o.StopTimeout, true, func(ctx context.Context) (bool, error) {
		names, err := list(ctx)
		if err != nil {
			return false, err
		}
		for _, n := range names {
			if !slices.Contains(s.ours, n) {
				s.ours = append(s.ours, n)
			}
		}
		left = names
		return len(left) == 0, nil
	})
	if err != nil {
		return s, fmt.Errorf("stopping Deployment %s/%s: %d pod(s) still there after %s (%s): %w", o.Namespace, o.Deployment, len(left), o.StopTimeout,
			strings.Join(left, ", "), err)
	}
	return s, nil
}

func (o *Options) scale(ctx context.Context, client kubernetes.Interface, replicas int32) error {
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	_, err := client.AppsV1().Deployments(o.Namespace).Patch(ctx, o.Deployment, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("scaling Deployment %s/%s to %d: %w", o.Namespace, o.Deployment, replicas, err)
	}
	return nil
}

// deleteLease deletes the Lease unless it is shared (or there is none); a
// missing one is no error.
func (o *Options) deleteLease(ctx context.Context, client kubernetes.Interface) error {
	if o.LeaseName == "" {
		return nil
	}
	lease := o.LeaseNamespace + "/" + o.LeaseName
	if o.LeaseShared {
		fmt.Fprintf(o.Out, "Lease %s is shared with another scheduler: kept.\n", lease)
		return nil
	}
	err := client.CoordinationV1().Leases(o.LeaseNamespace).Delete(ctx, o.LeaseName, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(o.Out, "Lease %s does not exist.\n", lease)
	case err != nil:
		return fmt.Errorf("deleting Lease %s: %w", lease, err)
	default:
		fmt.Fprintf(o.Out, "Lease %s deleted.\n", lease)
	}
	return nil
}

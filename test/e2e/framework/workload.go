package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// LabelApp groups a workload's pods.
const LabelApp = "app"

// Workload is a Deployment of one fixture image.
type Workload struct {
	Name          string
	Image         Image
	Replicas      int32
	SchedulerName string // "" for the default scheduler
	PullSecret    string // imagePullSecrets entry, "" for none
	Annotations   map[string]string
}

// Deployment builds the Deployment of w in namespace ns, images from the registries.
func (w Workload) Deployment(ns string, public, private Registry) *appsv1.Deployment {
	labels := map[string]string{LabelApp: w.Name}
	spec := v1.PodSpec{
		SchedulerName: w.SchedulerName,
		Containers: []v1.Container{{
			Name:  "main",
			Image: w.Image.Ref(public, private),
		}},
		// KWOK pods never stop by themselves; don't wait 30s for them.
		TerminationGracePeriodSeconds: ptr.To[int64](0),
	}
	if w.PullSecret != "" {
		spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: w.PullSecret}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(w.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: w.Annotations},
				Spec:       spec,
			},
		},
	}
}

// EnsureNamespace creates ns if missing, first waiting out a deletion in
// progress (a namespace being terminated accepts no new pods).
func EnsureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cur, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case err == nil && cur.DeletionTimestamp != nil:
			return false, nil
		case err == nil:
			return true, nil
		case !apierrors.IsNotFound(err):
			return false, err
		}
		_, err = cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
}

// ResetNamespace makes ns exist and be empty of Deployments and Pods, waiting
// until the pods are gone (quicker than deleting the namespace).
func ResetNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	if err := EnsureNamespace(ctx, cs, ns); err != nil {
		return err
	}
	bg := metav1.DeletePropagationBackground
	if err := cs.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{}); err != nil {
		return err
	}
	if err := cs.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(pods.Items) == 0 {
			return true, nil
		}
		return false, cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	})
}

// ApplyPullSecret creates or replaces a dockerconfigjson Secret for r.
func ApplyPullSecret(ctx context.Context, cs kubernetes.Interface, ns, name string, r Registry) error {
	s := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: DockerConfigJSON(r)},
	}
	_, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	}
	return err
}

// ApplyDeployment creates d, or replaces its spec if it exists.
func ApplyDeployment(ctx context.Context, cs kubernetes.Interface, d *appsv1.Deployment) error {
	_, err := cs.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, err := cs.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cur.Spec = d.Spec
	_, err = cs.AppsV1().Deployments(d.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

// PodState is where a pod stands in scheduling.
type PodState string

// Pod states.
const (
	PodScheduled     PodState = "Scheduled"
	PodUnschedulable PodState = "Unschedulable" // PodScheduled=False: a scheduler tried and found no node
	PodPending       PodState = "Pending"       // no scheduling attempt recorded (yet)
)

// StateOf classifies a pod.
func StateOf(p *v1.Pod) PodState {
	if p.Spec.NodeName != "" {
		return PodScheduled
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return PodUnschedulable
		}
	}
	return PodPending
}

// Counts tallies pods by state.
type Counts struct {
	Total, Scheduled, Unschedulable, Pending int
}

func (c Counts) String() string {
	return fmt.Sprintf("%d/%d scheduled, %d unschedulable, %d pending", c.Scheduled, c.Total, c.Unschedulable, c.Pending)
}

// Count lists the pods of ns (matching selector) and tallies them.
func Count(ctx context.Context, cs kubernetes.Interface, ns, selector string) (Counts, []v1.Pod, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return Counts{}, nil, err
	}
	var c Counts
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp != nil {
			continue
		}
		c.Total++
		switch StateOf(&pods.Items[i]) {
		case PodScheduled:
			c.Scheduled++
		case PodUnschedulable:
			c.Unschedulable++
		default:
			c.Pending++
		}
	}
	return c, pods.Items, nil
}

// WaitSettled polls until ns has want pods and none is Pending (each is
// scheduled or marked unschedulable), calling progress on every change. It
// returns the last counts, and an error on timeout.
func WaitSettled(ctx context.Context, cs kubernetes.Interface, ns, selector string, want int, timeout time.Duration, progress func(Counts)) (Counts, error) {
	var last Counts
	first := true
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		c, _, err := Count(ctx, cs, ns, selector)
		if err != nil {
			return false, nil // transient API errors: keep polling
		}
		if (first || c != last) && progress != nil {
			progress(c)
		}
		first, last = false, c
		return c.Total >= want && c.Pending == 0, nil
	})
	if err != nil {
		return last, fmt.Errorf("pods in %s not settled within %s (%s): %w", ns, timeout, last, err)
	}
	return last, nil
}

// WaitScheduled polls until ns has want pods (matching selector), all bound.
func WaitScheduled(ctx context.Context, cs kubernetes.Interface, ns, selector string, want int, timeout time.Duration) (Counts, error) {
	var last Counts
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		c, _, err := Count(ctx, cs, ns, selector)
		if err != nil {
			return false, nil
		}
		last = c
		return c.Total >= want && c.Scheduled == c.Total, nil
	})
	if err != nil {
		return last, fmt.Errorf("want %d pods scheduled in %s, have %s after %s: %w", want, ns, last, timeout, err)
	}
	return last, nil
}

// PodEvents returns the events of a pod, oldest first.
func PodEvents(ctx context.Context, cs kubernetes.Interface, p *v1.Pod) ([]v1.Event, error) {
	evs, err := cs.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + p.Name + ",involvedObject.uid=" + string(p.UID),
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(evs.Items, func(i, j int) bool { return eventTime(evs.Items[i]).Before(eventTime(evs.Items[j])) })
	return evs.Items, nil
}

func eventTime(e v1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// EventSource names who emitted an event (kube-scheduler sets
// reportingController to the profile's schedulerName).
func EventSource(e v1.Event) string {
	if e.ReportingController != "" {
		return e.ReportingController
	}
	return e.Source.Component
}

// ArchFilterNotes collects what the ArchFilter plugin said about a pod: its
// archfilter.io/ annotations other than the user's own, and events that are
// neither Scheduled nor FailedScheduling from the scheduler that placed it.
// It is empty while the plugin records nothing.
func ArchFilterNotes(p *v1.Pod, events []v1.Event) []string {
	var notes []string
	var keys []string
	for k := range p.Annotations {
		if strings.HasPrefix(k, "archfilter.io/") && k != "archfilter.io/skip" && k != "archfilter.io/platforms" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		notes = append(notes, strings.TrimPrefix(k, "archfilter.io/")+"="+p.Annotations[k])
	}
	for _, e := range events {
		if e.Reason == "Scheduled" || e.Reason == "FailedScheduling" || e.Reason == "Pulled" || e.Reason == "Started" || e.Reason == "Created" {
			continue
		}
		if src := EventSource(e); strings.Contains(src, "scheduler") || strings.Contains(strings.ToLower(e.Reason+e.Message), "archfilter") {
			notes = append(notes, e.Reason+": "+e.Message)
		}
	}
	return notes
}

// LastFailedScheduling returns the newest FailedScheduling message of a pod,
// or "" when there is none.
func LastFailedScheduling(events []v1.Event) string {
	msg := ""
	for _, e := range events {
		if e.Reason == "FailedScheduling" {
			msg = e.Message
		}
	}
	return msg
}

// ScheduledBy returns the source of the pod's Scheduled event ("" if none yet).
func ScheduledBy(events []v1.Event) string {
	for _, e := range events {
		if e.Reason == "Scheduled" {
			return EventSource(e)
		}
	}
	return ""
}

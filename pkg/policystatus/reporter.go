package policystatus

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/policystore"
)

// FieldManager names archfilter's writes of policies' status.
const FieldManager = "archfilter"

// DefaultInterval is how often the statuses are recomputed without a policy
// change (pods and nodes come and go).
const DefaultInterval = 30 * time.Second

// Reporter keeps the policies' status current: after each policy change
// (within a second) and every Interval, while Leading says this process leads.
// It writes a status only when it changed.
type Reporter struct {
	Client   dynamic.Interface
	Store    *policystore.Store
	Settings *decision.Settings
	Pods     corelisters.PodLister
	// NodePlatforms are the distinct platforms of the cluster's nodes.
	NodePlatforms func() []platform.NodePlatform
	Namespaces    decision.NamespaceLabels
	// Leading is nil when the process always reports.
	Leading  func() bool
	Interval time.Duration
	Now      func() time.Time
}

// Run reports until ctx ends.
func (r *Reporter) Run(ctx context.Context) {
	if r.Interval <= 0 {
		r.Interval = DefaultInterval
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	changed := make(chan struct{}, 1)
	r.Store.OnChange(func(policystore.Change) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	ticker := time.NewTicker(r.Interval)
	defer ticker.Stop()
	logger := klog.FromContext(ctx).WithName("policystatus")
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-changed:
			// Let a burst of changes (kubectl apply of several) settle.
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
		if r.Leading != nil && !r.Leading() {
			continue
		}
		if n, err := r.ReportAll(ctx); err != nil {
			logger.V(2).Info("Some ArchFilterPolicy statuses were not written; retrying", "written", n, "err", err.Error())
		} else if n > 0 {
			logger.V(4).Info("Wrote ArchFilterPolicy statuses", "written", n)
		}
	}
}

// ReportAll computes every policy's status and writes those that changed; it
// returns how many it wrote and the first error.
func (r *Reporter) ReportAll(ctx context.Context) (int, error) {
	now := metav1.NewTime(r.now())
	var nodes []platform.NodePlatform
	if r.NodePlatforms != nil {
		nodes = r.NodePlatforms()
	}
	written := 0
	var first error
	for _, obj := range r.Store.Objects() {
		in := Input{
			Settings:      r.Settings,
			Policy:        obj,
			Parsed:        r.Store.Lookup(obj.Namespace),
			Invalid:       r.Store.Invalid(obj.Namespace, obj.Name),
			Pods:          r.pods(obj.Namespace),
			NodePlatforms: nodes,
			Namespaces:    r.Namespaces,
		}
		st := Compute(in, now)
		if apiequality.Semantic.DeepEqual(st, obj.Status) {
			continue
		}
		if err := r.write(ctx, obj, st); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		written++
	}
	return written, first
}

func (r *Reporter) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// pods are the namespace's pods that are not finished.
func (r *Reporter) pods(namespace string) []*v1.Pod {
	if r.Pods == nil {
		return nil
	}
	list, err := r.Pods.Pods(namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	out := list[:0:0]
	for _, p := range list {
		if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

func (r *Reporter) write(ctx context.Context, obj *policyv1alpha1.ArchFilterPolicy, st policyv1alpha1.ArchFilterPolicyStatus) error {
	out := obj.DeepCopy()
	out.Status = st
	out.APIVersion, out.Kind = policyv1alpha1.SchemeGroupVersion.String(), policyv1alpha1.Kind
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(out)
	if err != nil {
		return err
	}
	_, err = r.Client.Resource(policyv1alpha1.SchemeGroupVersionResource).Namespace(obj.Namespace).
		UpdateStatus(ctx, &unstructured.Unstructured{Object: content}, metav1.UpdateOptions{FieldManager: FieldManager})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// The informer brings the newer object; the next round writes again.
		return fmt.Errorf("ArchFilterPolicy %s/%s changed meanwhile: %w", obj.Namespace, obj.Name, err)
	}
	return fmt.Errorf("writing the status of ArchFilterPolicy %s/%s: %w", obj.Namespace, obj.Name, err)
}

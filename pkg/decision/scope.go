package decision

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
)

// SkipReason says why archfilter leaves a pod alone; "" when it applies.
type SkipReason string

const (
	// SkipBound: the pod names its node (spec.nodeName); no scheduler places it.
	SkipBound SkipReason = "bound pod: spec.nodeName is set, no scheduler places it"
	// SkipOtherScheduler: the pod names a scheduler without ArchFilter, and
	// the asking front-end is that plugin.
	SkipOtherScheduler SkipReason = "other scheduler: its schedulerName runs no ArchFilter profile"
	// SkipArchFilterScheduler: the pod names a scheduler whose profile runs the
	// ArchFilter plugin, which decides for it; the placement mode leaves it be.
	SkipArchFilterScheduler SkipReason = "its schedulerName runs ArchFilter, which decides for it"
	// SkipAnnotation: the pod opts out with archfilter.io/skip.
	SkipAnnotation SkipReason = "annotation " + annotations.Skip
	// SkipExcludedNamespace: the namespace is in excludedNamespaces.
	SkipExcludedNamespace SkipReason = "excluded namespace"
	// SkipDaemonSet: a DaemonSet pod under daemonSetPolicy Skip: its
	// controller pinned it to its node, and filtering could only leave it Pending.
	SkipDaemonSet SkipReason = "DaemonSet pod (daemonSetPolicy Skip)"
	// SkipNamespaceNotSelected: namespaceSelector does not select the
	// namespace, or its labels are not known (a pod is not constrained on a guess).
	SkipNamespaceNotSelected SkipReason = "namespace not selected by namespaceSelector"
)

// Front is the front-end asking: it changes only which scheduler names are in scope.
type Front int

const (
	// ViaScheduler is the ArchFilter plugin in a scheduler profile.
	ViaScheduler Front = iota
	// ViaPlacement is the placement mode: node affinity written into pods that
	// any scheduler places.
	ViaPlacement
)

func (f Front) String() string {
	if f == ViaPlacement {
		return "placement mode"
	}
	return "scheduler"
}

// NamespaceLabels returns the labels of a namespace, and false when it is not known.
type NamespaceLabels func(namespace string) (labels.Set, bool)

// Scope says why archfilter, through front, leaves pod alone, or "" when it applies.
// Call it on the settings ForPod returns, which carry the pod's policy.
// namespaces is called only when a namespaceSelector is configured. It reads memory
// only and does not allocate.
func (s *Settings) Scope(pod *v1.Pod, front Front, namespaces NamespaceLabels) SkipReason {
	if pod.Spec.NodeName != "" {
		return SkipBound
	}
	if s.Schedulers.Len() > 0 {
		named := s.Schedulers.Has(pod.Spec.SchedulerName)
		switch {
		case front == ViaPlacement && named:
			return SkipArchFilterScheduler
		case front == ViaScheduler && !named:
			return SkipOtherScheduler
		}
	}
	if skip, _ := annotations.ParseSkip(pod.Annotations[annotations.Skip]); skip {
		return SkipAnnotation
	}
	if s.ExcludedNamespaces.Has(pod.Namespace) {
		return SkipExcludedNamespace
	}
	if s.DaemonSetPolicy == config.DaemonSetPolicySkip && IsDaemonSetPod(pod) {
		return SkipDaemonSet
	}
	if s.NamespaceSelector != nil {
		lbls, ok := labels.Set(nil), false
		if namespaces != nil {
			lbls, ok = namespaces(pod.Namespace)
		}
		if !ok || !s.NamespaceSelector.Matches(lbls) {
			return SkipNamespaceNotSelected
		}
	}
	if s.optedOut(pod) {
		return SkipPolicyOptOut
	}
	return ""
}

// FrontOf is the front-end that decides for pod: the plugin when its
// schedulerName runs ArchFilter (Settings.Schedulers), else the placement mode.
// For readers that explain a pod (kubectl archfilter), not for the front-ends
// themselves, which know what they are.
func (s *Settings) FrontOf(pod *v1.Pod) Front {
	if s.Schedulers.Has(pod.Spec.SchedulerName) {
		return ViaScheduler
	}
	return ViaPlacement
}

// ReadsImages reports whether archfilter still reads the images of a pod it
// leaves alone for reason: only DaemonSet pods under daemonSetPolicy Skip, whose
// images it resolves to warn when their node cannot run them.
func (r SkipReason) ReadsImages() bool { return r == SkipDaemonSet }

// IsDaemonSetPod reports whether a DaemonSet controls pod.
func IsDaemonSetPod(pod *v1.Pod) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	return ref != nil && ref.Kind == "DaemonSet"
}

// InvalidSkip returns the error of a malformed archfilter.io/skip annotation (the pod
// is then not skipped), or nil, for the front-end to report.
func InvalidSkip(pod *v1.Pod) error {
	_, err := annotations.ParseSkip(pod.Annotations[annotations.Skip])
	return err
}

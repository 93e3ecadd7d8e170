// Package policystatus says, in each ArchFilterPolicy's status, what
// archfilter makes of it: whether it is in force (Accepted), whether another
// policy governs some of the pods it selects (Overlapping), whether it sets
// fields the cluster's ArchFilterArgs do not let a policy override
// (Overstepping), and whether it changes anything (Effective: a selector that
// matches no pod, platforms no node has). Compute is pure; Reporter writes the
// result with the status subresource. None of it stops a front-end: a policy
// in error is reported, never fatal.
package policystatus

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/archfilter/archfilter/apis/config"
	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
)

// Input is what Compute reads, all from memory.
type Input struct {
	// Settings are the cluster's (ArchFilterArgs).
	Settings *decision.Settings
	// Policy is the object whose status is computed.
	Policy *policyv1alpha1.ArchFilterPolicy
	// Parsed are the valid policies of its namespace, in precedence order
	// (the store's Lookup); Invalid, why Policy does not parse (nil if it does).
	Parsed  []*decision.Policy
	Invalid error
	// Pods are the namespace's pods that a scheduler has yet to place or
	// that run (not finished ones).
	Pods []*v1.Pod
	// NodePlatforms are the distinct platforms of the cluster's nodes.
	NodePlatforms []platform.NodePlatform
	// Namespaces reads a namespace's labels, for a namespaceSelector.
	Namespaces decision.NamespaceLabels
}

// Compute returns the status Input.Policy should have: its current status with
// the four conditions set (a condition's lastTransitionTime changes only when
// its status does) and the pod counts.
func Compute(in Input, now metav1.Time) policyv1alpha1.ArchFilterPolicyStatus {
	obj := in.Policy
	st := *obj.Status.DeepCopy()
	st.ObservedGeneration = obj.Generation
	set := func(typ string, status bool, reason, msg string) {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg,
			ObservedGeneration: obj.Generation, LastTransitionTime: now}
		if status {
			c.Status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
	self := findSelf(in.Parsed, obj.Name)
	// Pod counts: selected by this policy, and governed by it.
	var selected, governed int32
	others := map[string]int{}
	if self != nil {
		for _, pod := range in.Pods {
			if !self.Selects(pod) {
				continue
			}
			selected++
			gov := governing(in.Parsed, pod)
			if gov == self {
				governed++
			} else {
				others[gov.Name]++
			}
		}
	}
	st.SelectedPods, st.GovernedPods = selected, governed

	// Accepted.
	accepted, reason, msg := accept(in, self)
	set(policyv1alpha1.ConditionAccepted, accepted, reason, msg)

	// Overlapping.
	if self != nil {
		shadow := shadowedBy(in.Parsed, self)
		switch {
		case shadow != nil:
			set(policyv1alpha1.ConditionOverlapping, true, policyv1alpha1.ReasonOtherPolicyWins, fmt.Sprintf(
				"ArchFilterPolicy %s selects every pod of the namespace and comes first (a policy with a podSelector comes before one without, then by name): this policy governs no pod", shadow.Name))
		case len(others) > 0:
			set(policyv1alpha1.ConditionOverlapping, true, policyv1alpha1.ReasonOtherPolicyWins, fmt.Sprintf(
				"of the %d pods this policy selects, %s (a policy with a podSelector comes before one without, then by name)", selected, describeOthers(others)))
		default:
			set(policyv1alpha1.ConditionOverlapping, false, policyv1alpha1.ReasonNoOverlap, "no other policy governs a pod this policy selects")
		}
	} else {
		meta.RemoveStatusCondition(&st.Conditions, policyv1alpha1.ConditionOverlapping)
	}

	// Overstepping.
	if self != nil {
		limited := in.Settings.WithinLimits(self)
		if len(limited.Ignored) > 0 {
			set(policyv1alpha1.ConditionOverstepping, true, policyv1alpha1.ReasonFieldsNotAllowed, fmt.Sprintf(
				"the cluster's ArchFilterArgs (policies.allowedOverrides: %s) do not let a policy set %s: ignored; the rest of the policy applies",
				fieldList(in.Settings.PolicyOverrides), fieldList(limited.Ignored)))
		} else {
			set(policyv1alpha1.ConditionOverstepping, false, policyv1alpha1.ReasonWithinLimits, "every field the policy sets may override the cluster's settings")
		}
	} else {
		meta.RemoveStatusCondition(&st.Conditions, policyv1alpha1.ConditionOverstepping)
	}

	// Effective.
	if self != nil && accepted {
		effective, reason, msg := effect(in, self, selected, governed)
		set(policyv1alpha1.ConditionEffective, effective, reason, msg)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, policyv1alpha1.ConditionEffective)
	}
	return st
}

func findSelf(parsed []*decision.Policy, name string) *decision.Policy {
	i := slices.IndexFunc(parsed, func(p *decision.Policy) bool { return p.Name == name })
	if i < 0 {
		return nil
	}
	return parsed[i]
}

// governing is the first policy in precedence order that selects pod.
func governing(parsed []*decision.Policy, pod *v1.Pod) *decision.Policy {
	for _, p := range parsed {
		if p.Selects(pod) {
			return p
		}
	}
	return nil
}

// shadowedBy returns the policy before self that selects every pod, whatever
// the pods: self then governs none.
func shadowedBy(parsed []*decision.Policy, self *decision.Policy) *decision.Policy {
	for _, p := range parsed {
		if p == self {
			return nil
		}
		if p.SelectsAll() {
			return p
		}
	}
	return nil
}

func describeOthers(others map[string]int) string {
	names := make([]string, 0, len(others))
	for n := range others {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%d are governed by ArchFilterPolicy %s", others[n], n))
	}
	return strings.Join(parts, ", ")
}

func fieldList(fs []config.PolicyField) string {
	if len(fs) == 0 {
		return "none"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = string(f)
	}
	return strings.Join(parts, ", ")
}

// accept says whether the policy is in force, and why not.
func accept(in Input, self *decision.Policy) (bool, string, string) {
	s, ns := in.Settings, in.Policy.Namespace
	switch {
	case !s.PoliciesEnabled:
		return false, policyv1alpha1.ReasonPoliciesDisabled, "the cluster's ArchFilterArgs turn policies off (policies.enabled: false)"
	case in.Invalid != nil:
		return false, policyv1alpha1.ReasonInvalid, in.Invalid.Error()
	case self == nil:
		return false, policyv1alpha1.ReasonInvalid, "not parsed yet"
	case s.ExcludedNamespaces.Has(ns):
		return false, policyv1alpha1.ReasonNamespaceExcluded, fmt.Sprintf("namespace %s is in the cluster's excludedNamespaces: archfilter leaves its pods alone, policy or not", ns)
	case s.NamespaceSelector != nil:
		var lbls labels.Set
		ok := false
		if in.Namespaces != nil {
			lbls, ok = in.Namespaces(ns)
		}
		if !ok || !s.NamespaceSelector.Matches(lbls) {
			return false, policyv1alpha1.ReasonNamespaceNotSelected, fmt.Sprintf("the cluster's namespaceSelector (%s) does not select namespace %s: archfilter leaves its pods alone, policy or not", s.NamespaceSelector, ns)
		}
	}
	return true, policyv1alpha1.ReasonInForce, "in force: " + self.String()
}

// effect says whether the policy changes anything the nodes can honour.
func effect(in Input, self *decision.Policy, selected, governed int32) (bool, string, string) {
	if selected == 0 {
		return false, policyv1alpha1.ReasonNoPodsSelected, "the podSelector matches no pod of the namespace yet"
	}
	limited := in.Settings.WithinLimits(self)
	var missing []string
	if limited.Allowed != nil && len(in.NodePlatforms) > 0 {
		for _, p := range limited.Allowed.Platforms() {
			if !anyNode(platform.NewSet(p), in.NodePlatforms) {
				missing = append(missing, p.String())
			}
		}
		if len(missing) == len(limited.Allowed.Platforms()) {
			return false, policyv1alpha1.ReasonNoNodeOfPlatform, fmt.Sprintf(
				"no node of the cluster runs %s, the platforms this policy allows: the pods it governs stay Pending until one does", limited.Allowed)
		}
	}
	for _, pref := range limited.Preferences {
		if len(in.NodePlatforms) > 0 && !anyNode(platform.NewSet(pref.Platform), in.NodePlatforms) {
			missing = append(missing, pref.Platform.String())
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		missing = slices.Compact(missing)
		return false, policyv1alpha1.ReasonNoNodeOfPlatform, fmt.Sprintf(
			"no node of the cluster runs %s, named by this policy: that part of it has no effect until one does", strings.Join(missing, ", "))
	}
	return true, policyv1alpha1.ReasonEffective, fmt.Sprintf("governs %d of the %d pods it selects", governed, selected)
}

func anyNode(set platform.Set, nodes []platform.NodePlatform) bool {
	return slices.ContainsFunc(nodes, set.MatchesNode)
}

package policystatus

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/archfilter/archfilter/apis/config"
	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
)

func settings(t *testing.T, mutate func(*config.ArchFilterArgs)) *decision.Settings {
	t.Helper()
	args := &config.ArchFilterArgs{FailurePolicy: config.FailurePolicyIgnore, DaemonSetPolicy: config.DaemonSetPolicySkip,
		ExcludedNamespaces: []string{"kube-system"},
		Policies:           config.PolicyArgs{Enabled: true, AllowedOverrides: config.PolicyFields}}
	if mutate != nil {
		mutate(args)
	}
	s, err := decision.NewSettings(args)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func policy(ns, name string, selector map[string]string, mutate func(*policyv1alpha1.ArchFilterPolicySpec)) *policyv1alpha1.ArchFilterPolicy {
	p := &policyv1alpha1.ArchFilterPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 3}}
	if selector != nil {
		p.Spec.PodSelector = policyv1alpha1.MatchingLabels(selector)
	}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func pods(ns string, lbls ...map[string]string) []*v1.Pod {
	var out []*v1.Pod
	for i, l := range lbls {
		out = append(out, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: string(rune('a' + i)), Labels: l}})
	}
	return out
}

var (
	amd64 = platform.NodePlatform{OS: "linux", Architecture: "amd64"}
	arm64 = platform.NodePlatform{OS: "linux", Architecture: "arm64"}
	now   = metav1.NewTime(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
)

// input parses objs (one namespace) and computes the status of objs[0].
func compute(t *testing.T, s *decision.Settings, ps []*v1.Pod, nodes []platform.NodePlatform, ns decision.NamespaceLabels, objs ...*policyv1alpha1.ArchFilterPolicy) policyv1alpha1.ArchFilterPolicyStatus {
	t.Helper()
	var parsed []*decision.Policy
	var invalid error
	for i, o := range objs {
		p, err := decision.ParsePolicy(o)
		if err != nil {
			if i == 0 {
				invalid = err
			}
			continue
		}
		parsed = append(parsed, p)
	}
	decision.SortPolicies(parsed)
	return Compute(Input{Settings: s, Policy: objs[0], Parsed: parsed, Invalid: invalid, Pods: ps, NodePlatforms: nodes, Namespaces: ns}, now)
}

func condition(t *testing.T, st policyv1alpha1.ArchFilterPolicyStatus, typ string) *metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, st.Conditions)
	}
	if c.ObservedGeneration != 3 {
		t.Errorf("%s observedGeneration %d, want 3", typ, c.ObservedGeneration)
	}
	return c
}

func TestCompute(t *testing.T) {
	web := map[string]string{"app": "web"}
	nodes := []platform.NodePlatform{amd64, arm64}
	t.Run("in force and effective", func(t *testing.T) {
		st := compute(t, settings(t, nil), pods("team", web, nil), nodes, nil,
			policy("team", "arm", web, func(s *policyv1alpha1.ArchFilterPolicySpec) { s.AllowedPlatforms = []string{"linux/arm64"} }))
		if c := condition(t, st, policyv1alpha1.ConditionAccepted); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "allowedPlatforms linux/arm64") {
			t.Errorf("Accepted %+v", c)
		}
		if c := condition(t, st, policyv1alpha1.ConditionEffective); c.Status != metav1.ConditionTrue {
			t.Errorf("Effective %+v", c)
		}
		if c := condition(t, st, policyv1alpha1.ConditionOverlapping); c.Status != metav1.ConditionFalse {
			t.Errorf("Overlapping %+v", c)
		}
		if st.SelectedPods != 1 || st.GovernedPods != 1 || st.ObservedGeneration != 3 {
			t.Errorf("counts %d/%d, generation %d", st.SelectedPods, st.GovernedPods, st.ObservedGeneration)
		}
	})
	t.Run("the loser of an overlap says who wins", func(t *testing.T) {
		st := compute(t, settings(t, nil), pods("team", web, web, nil), nodes, nil,
			policy("team", "all", nil, nil), policy("team", "web", web, nil))
		c := condition(t, st, policyv1alpha1.ConditionOverlapping)
		if c.Status != metav1.ConditionTrue || c.Reason != policyv1alpha1.ReasonOtherPolicyWins || !strings.Contains(c.Message, "2 are governed by ArchFilterPolicy web") {
			t.Errorf("Overlapping %+v", c)
		}
		if st.SelectedPods != 3 || st.GovernedPods != 1 {
			t.Errorf("counts %d/%d, want 3/1", st.SelectedPods, st.GovernedPods)
		}
	})
	t.Run("a second select-all policy is shadowed whatever the pods", func(t *testing.T) {
		st := compute(t, settings(t, nil), nil, nodes, nil, policy("team", "b", nil, nil), policy("team", "a", nil, nil))
		if c := condition(t, st, policyv1alpha1.ConditionOverlapping); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "ArchFilterPolicy a selects every pod") {
			t.Errorf("Overlapping %+v", c)
		}
	})
	t.Run("fields the admin withholds", func(t *testing.T) {
		s := settings(t, func(a *config.ArchFilterArgs) {
			a.Policies.AllowedOverrides = []config.PolicyField{config.PolicyFieldPreferredPlatforms}
		})
		fp := policyv1alpha1.FailurePolicyFail
		st := compute(t, s, pods("team", nil), nodes, nil, policy("team", "p", nil, func(sp *policyv1alpha1.ArchFilterPolicySpec) { sp.FailurePolicy = &fp }))
		if c := condition(t, st, policyv1alpha1.ConditionOverstepping); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "failurePolicy") {
			t.Errorf("Overstepping %+v", c)
		}
	})
	t.Run("policies turned off", func(t *testing.T) {
		s := settings(t, func(a *config.ArchFilterArgs) { a.Policies.Enabled = false })
		st := compute(t, s, nil, nodes, nil, policy("team", "p", nil, nil))
		if c := condition(t, st, policyv1alpha1.ConditionAccepted); c.Status != metav1.ConditionFalse || c.Reason != policyv1alpha1.ReasonPoliciesDisabled {
			t.Errorf("Accepted %+v", c)
		}
	})
	t.Run("an excluded namespace", func(t *testing.T) {
		st := compute(t, settings(t, nil), nil, nodes, nil, policy("kube-system", "p", nil, nil))
		if c := condition(t, st, policyv1alpha1.ConditionAccepted); c.Status != metav1.ConditionFalse || c.Reason != policyv1alpha1.ReasonNamespaceExcluded {
			t.Errorf("Accepted %+v", c)
		}
	})
	t.Run("a namespace the selector leaves out", func(t *testing.T) {
		s := settings(t, func(a *config.ArchFilterArgs) {
			a.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"arch": "on"}}
		})
		ns := func(string) (labels.Set, bool) { return labels.Set{}, true }
		st := compute(t, s, nil, nodes, ns, policy("team", "p", nil, nil))
		if c := condition(t, st, policyv1alpha1.ConditionAccepted); c.Reason != policyv1alpha1.ReasonNamespaceNotSelected {
			t.Errorf("Accepted %+v", c)
		}
	})
	t.Run("a selector that matches nothing", func(t *testing.T) {
		st := compute(t, settings(t, nil), pods("team", nil), nodes, nil, policy("team", "p", web, nil))
		if c := condition(t, st, policyv1alpha1.ConditionEffective); c.Status != metav1.ConditionFalse || c.Reason != policyv1alpha1.ReasonNoPodsSelected {
			t.Errorf("Effective %+v", c)
		}
	})
	t.Run("a platform no node has", func(t *testing.T) {
		st := compute(t, settings(t, nil), pods("team", nil), nodes, nil,
			policy("team", "p", nil, func(s *policyv1alpha1.ArchFilterPolicySpec) { s.AllowedPlatforms = []string{"linux/s390x"} }))
		if c := condition(t, st, policyv1alpha1.ConditionEffective); c.Status != metav1.ConditionFalse || c.Reason != policyv1alpha1.ReasonNoNodeOfPlatform || !strings.Contains(c.Message, "linux/s390x") {
			t.Errorf("Effective %+v", c)
		}
	})
	t.Run("an invalid policy", func(t *testing.T) {
		st := compute(t, settings(t, nil), nil, nodes, nil,
			policy("team", "p", nil, func(s *policyv1alpha1.ArchFilterPolicySpec) { s.AllowedPlatforms = []string{"linux"} }))
		if c := condition(t, st, policyv1alpha1.ConditionAccepted); c.Status != metav1.ConditionFalse || c.Reason != policyv1alpha1.ReasonInvalid || !strings.Contains(c.Message, "spec.allowedPlatforms[0]") {
			t.Errorf("Accepted %+v", c)
		}
	})
	t.Run("a transition time changes only with the status", func(t *testing.T) {
		obj := policy("team", "p", nil, nil)
		first := compute(t, settings(t, nil), pods("team", nil), nodes, nil, obj)
		obj.Status = first
		later := metav1.NewTime(now.Add(time.Hour))
		parsed, _ := decision.ParsePolicy(obj)
		second := Compute(Input{Settings: settings(t, nil), Policy: obj, Parsed: []*decision.Policy{parsed}, Pods: pods("team", nil), NodePlatforms: nodes}, later)
		if c := meta.FindStatusCondition(second.Conditions, policyv1alpha1.ConditionAccepted); !c.LastTransitionTime.Equal(&now) {
			t.Errorf("lastTransitionTime moved to %v", c.LastTransitionTime)
		}
	})
}

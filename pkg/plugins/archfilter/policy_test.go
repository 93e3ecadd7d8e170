package archfilter

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/policystore"
)

func armOnlyPolicy(selector map[string]string) *policyv1alpha1.ArchFilterPolicy {
	p := &policyv1alpha1.ArchFilterPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "arm-only"},
		Spec: policyv1alpha1.ArchFilterPolicySpec{
			AllowedPlatforms:   []string{"linux/arm64"},
			PreferredPlatforms: []policyv1alpha1.PlatformPreference{{Platform: "linux/arm64", Weight: 60}},
		},
	}
	if selector != nil {
		p.Spec.PodSelector = policyv1alpha1.MatchingLabels(selector)
	}
	return p
}

// TestPolicyInTheCycle: PreFilter narrows to the platforms the pod's policy
// allows and rejects, naming the policy, a pod whose images run on none;
// PreScore takes the policy's preferences; a pod the policy does not select
// is decided as before.
func TestPolicyInTheCycle(t *testing.T) {
	ctx := testContext(t)
	store := policystore.New()
	store.Set(armOnlyPolicy(map[string]string{"team": "arm"}))
	h := newHarness(t, ctx, harnessConfig{policies: store})

	_, res, s := h.preFilter(ctx, makePod("multi", imgMulti).Label("team", "arm").Obj())
	if !s.IsSuccess() || res == nil || res.AllNodes() {
		t.Fatalf("PreFilter of a multi-arch pod under an arm64-only policy: %v, %v", res, s)
	}
	for name := range res.NodeNames {
		if !strings.Contains(name, "arm64") && name != "no-platform-labels" { // a node without labels is not judged
			t.Errorf("the policy allows linux/arm64 only, PreFilter keeps node %s", name)
		}
	}

	_, _, s = h.preFilter(ctx, makePod("amd", imgAMD64).Label("team", "arm").Obj())
	if s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), "ArchFilterPolicy default/arm-only") {
		t.Errorf("an amd64-only pod under an arm64-only policy: %v, want UnschedulableAndUnresolvable naming the policy", s)
	}

	if _, _, s := h.preFilter(ctx, makePod("other", imgAMD64).Obj()); !s.IsSuccess() && !s.IsSkip() {
		t.Errorf("a pod the policy does not select: %v", s)
	}

	rules := h.pl.settingsFor(makePod("multi", imgMulti).Label("team", "arm").Obj())
	prefs, from, _ := rules.Preferred(makePod("multi", imgMulti).Label("team", "arm").Obj())
	if decision.PreferencesString(prefs) != "linux/arm64=60" || !strings.Contains(string(from), "default/arm-only") {
		t.Errorf("preferences %v from %q, want the policy's", prefs, from)
	}
}

// TestPolicyChangeRequeues: a policy added, changed or deleted activates the
// unscheduled pods of its namespace it selects, before or after; others stay.
func TestPolicyChangeRequeues(t *testing.T) {
	ctx := testContext(t)
	store := policystore.New()
	web := makePod("web", imgAMD64).Label("team", "arm").Obj()
	db := makePod("db", imgAMD64).Label("team", "db").Obj()
	bound := makePod("bound", imgAMD64).Label("team", "arm").Node("n").Obj()
	elsewhere := makePod("elsewhere", imgAMD64).Namespace("other").Label("team", "arm").Obj()
	h := newHarness(t, ctx, harnessConfig{policies: store, objects: []runtime.Object{web, db, bound, elsewhere}})
	h.poll(ctx, "the pod informer to hold the pods", func() bool {
		pods, _ := h.factory.Core().V1().Pods().Lister().List(labels.Everything())
		return len(pods) == 4
	})
	store.Set(armOnlyPolicy(map[string]string{"team": "arm"}))
	if h.act.activations("default/web") != 1 {
		t.Errorf("the pod the new policy selects was activated %d times, want 1", h.act.activations("default/web"))
	}
	for _, key := range []string{"default/db", "default/bound", "other/elsewhere"} {
		if n := h.act.activations(key); n != 0 {
			t.Errorf("%s activated %d times, want 0", key, n)
		}
	}
	// Changed to select team=db: both the pod it selected and the one it selects now.
	store.Set(armOnlyPolicy(map[string]string{"team": "db"}))
	if h.act.activations("default/web") != 2 || h.act.activations("default/db") != 1 {
		t.Errorf("after the selector changed: web %d, db %d activations; want 2, 1", h.act.activations("default/web"), h.act.activations("default/db"))
	}
	store.Delete("default", "arm-only")
	if h.act.activations("default/db") != 2 {
		t.Errorf("after the deletion: db %d activations, want 2", h.act.activations("default/db"))
	}
}

// TestPolicyEvent: the policies' event is registered only when the store
// watched from the start, and its hint queues the pods the policy selects,
// before or after, in their namespace only.
func TestPolicyEvent(t *testing.T) {
	ctx := testContext(t)
	for _, watched := range []bool{false, true} {
		h := newHarness(t, ctx, harnessConfig{policies: policystore.New(), policiesWatched: watched})
		events, err := h.pl.EventsToRegister(ctx)
		if err != nil {
			t.Fatal(err)
		}
		registered := false
		for _, e := range events {
			if e.Event.Resource == "archfilterpolicies.v1alpha1.archfilter.io" {
				registered = true
			}
		}
		if registered != watched {
			t.Errorf("watched from the start %v: policy event registered %v", watched, registered)
		}
	}

	h := newHarness(t, ctx, harnessConfig{policies: policystore.New(), policiesWatched: true})
	pod := makePod("web", imgAMD64).Label("team", "arm").Obj()
	asUnstructured := func(p *policyv1alpha1.ArchFilterPolicy) *unstructured.Unstructured {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: content}
	}
	selecting := asUnstructured(armOnlyPolicy(map[string]string{"team": "arm"}))
	other := asUnstructured(armOnlyPolicy(map[string]string{"team": "db"}))
	otherNS := armOnlyPolicy(nil)
	otherNS.Namespace = "elsewhere"
	for _, tc := range []struct {
		name     string
		old, new any
		want     fwk.QueueingHint
	}{
		{name: "added, selecting the pod", new: selecting, want: fwk.Queue},
		{name: "added, not selecting it", new: other, want: fwk.QueueSkip},
		{name: "changed away from the pod", old: selecting, new: other, want: fwk.Queue},
		{name: "deleted, having selected it", old: selecting, want: fwk.Queue},
		{name: "in another namespace", new: asUnstructured(otherNS), want: fwk.QueueSkip},
	} {
		got, err := h.pl.isSchedulableAfterPolicyChange(klog.Background(), pod, tc.old, tc.new)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}

	// A pod's labels changing requeues it when its namespace has policies.
	h.pl.policies.Set(armOnlyPolicy(map[string]string{"team": "arm"}))
	relabelled := pod.DeepCopy()
	relabelled.Labels = map[string]string{"team": "db"}
	if got, _ := h.pl.isSchedulableAfterPodUpdate(klog.Background(), pod, pod, relabelled); got != fwk.Queue {
		t.Errorf("relabelled pod in a namespace with policies: %v, want Queue", got)
	}
}

package policystore

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
)

func obj(ns, name string, selector map[string]string, allowed ...string) *policyv1alpha1.ArchFilterPolicy {
	p := &policyv1alpha1.ArchFilterPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if selector != nil {
		p.Spec.PodSelector = policyv1alpha1.MatchingLabels(selector)
	}
	p.Spec.AllowedPlatforms = allowed
	return p
}

func names(s *Store, ns string) []string {
	var out []string
	for _, p := range s.Lookup(ns) {
		out = append(out, p.Name)
	}
	return out
}

// TestStore: policies are kept by namespace in precedence order, an invalid
// one is held apart with its error, and every change is announced with what
// the policy was before and is after.
func TestStore(t *testing.T) {
	s := New()
	var changes []Change
	s.OnChange(func(c Change) { changes = append(changes, c) })

	s.Set(obj("a", "zz-all", nil, "linux/amd64"))
	s.Set(obj("a", "web", map[string]string{"app": "web"}, "linux/arm64"))
	s.Set(obj("b", "all", nil))
	if got := names(s, "a"); len(got) != 2 || got[0] != "web" || got[1] != "zz-all" {
		t.Errorf("namespace a holds %v, want [web zz-all]", got)
	}
	held := s.Lookup("a")
	s.Set(obj("a", "web", map[string]string{"app": "web"}, "linux/s390x"))
	if held[0].Allowed.String() != "linux/arm64" {
		t.Error("a slice Lookup returned was changed in place")
	}
	last := changes[len(changes)-1]
	if last.Before == nil || last.After == nil || last.Before.Allowed.String() != "linux/arm64" || last.After.Allowed.String() != "linux/s390x" {
		t.Errorf("update announced as %+v", last)
	}

	s.Set(obj("a", "bad", nil, "linux"))
	if err := s.Invalid("a", "bad"); err == nil {
		t.Error("an invalid policy has no error")
	}
	if got := names(s, "a"); len(got) != 2 {
		t.Errorf("an invalid policy joined the valid ones: %v", got)
	}
	if s.Len() != 4 || len(s.Objects()) != 4 {
		t.Errorf("Len %d, %d objects; want 4", s.Len(), len(s.Objects()))
	}

	s.Delete("a", "web")
	last = changes[len(changes)-1]
	if last.Before == nil || last.After != nil || last.Name != "web" {
		t.Errorf("deletion announced as %+v", last)
	}
	if got := names(s, "a"); len(got) != 1 || got[0] != "zz-all" {
		t.Errorf("after the deletion namespace a holds %v", got)
	}
	s.Delete("b", "all")
	if s.Lookup("b") != nil {
		t.Error("an emptied namespace still has a slice")
	}
	var nilStore *Store
	if nilStore.Lookup("a") != nil {
		t.Error("a nil store should hold nothing")
	}
}

// TestFromObject reads what informers deliver: typed, unstructured, tombstones.
func TestFromObject(t *testing.T) {
	typed := obj("a", "p", nil, "linux/arm64")
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	for _, in := range []any{typed, u, cache.DeletedFinalStateUnknown{Key: "a/p", Obj: u}} {
		p, err := FromObject(in)
		if err != nil || p.Name != "p" || len(p.Spec.AllowedPlatforms) != 1 {
			t.Errorf("FromObject(%T) = %+v, %v", in, p, err)
		}
	}
	if _, err := FromObject("nope"); err == nil {
		t.Error("a string converted")
	}
}

// Package policystore keeps the cluster's ArchFilterPolicy objects parsed in
// memory, by namespace and in precedence order, for the front-ends to read in
// their decisions without I/O. It watches them with an informer when the CRD
// is installed and the caller may list them, says why not otherwise, and
// starts watching when the CRD appears later.
package policystore

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/pkg/decision"
)

// Change is one policy added, updated or deleted: Before is nil when it was
// added, After when it was deleted. Either may be an invalid policy's
// namespace and name only (Invalid set).
type Change struct {
	Namespace, Name string
	Before, After   *decision.Policy
}

// Store holds the parsed policies. The zero value is not usable; call New.
type Store struct {
	mu sync.RWMutex
	// byNamespace holds each namespace's valid policies in precedence order.
	// A slice is never changed once stored (a change stores a new one), so
	// readers may keep it.
	byNamespace map[string][]*decision.Policy
	// invalid holds, by "namespace/name", why a policy does not parse.
	invalid map[string]error
	// objects holds the last object seen, by "namespace/name", for status.
	objects   map[string]*policyv1alpha1.ArchFilterPolicy
	listeners []func(Change)
	state     State
}

// State says whether the store reflects the cluster.
type State struct {
	// Watching is true once the informer has synced: the store holds every
	// policy the cluster has.
	Watching bool
	// Reason says why the store is not watching ("" while it is, or while it
	// is starting).
	Reason string
}

// New returns an empty store.
func New() *Store {
	return &Store{
		byNamespace: map[string][]*decision.Policy{},
		invalid:     map[string]error{},
		objects:     map[string]*policyv1alpha1.ArchFilterPolicy{},
	}
}

// Lookup returns the valid policies of namespace in precedence order; the
// caller must not change the slice. It is a decision.PolicyLookup.
func (s *Store) Lookup(namespace string) []*decision.Policy {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byNamespace[namespace]
}

// Len is how many policies the store holds, valid or not.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.objects)
}

// Objects returns the policies as last seen, sorted by namespace and name.
func (s *Store) Objects() []*policyv1alpha1.ArchFilterPolicy {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*policyv1alpha1.ArchFilterPolicy, 0, len(s.objects))
	for _, o := range s.objects {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b *policyv1alpha1.ArchFilterPolicy) int {
		if a.Namespace != b.Namespace {
			if a.Namespace < b.Namespace {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// Invalid returns why the policy namespace/name does not parse, or nil.
func (s *Store) Invalid(namespace, name string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.invalid[namespace+"/"+name]
}

// State says whether the store reflects the cluster.
func (s *Store) State() State {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state
}

func (s *Store) setState(st State) {
	s.mu.Lock()
	s.state = st
	s.mu.Unlock()
}

// OnChange registers fn, called after every change with the store's lock
// released, in the informer's goroutine.
func (s *Store) OnChange(fn func(Change)) {
	s.mu.Lock()
	s.listeners = append(s.listeners, fn)
	s.mu.Unlock()
}

// Set adds or replaces obj.
func (s *Store) Set(obj *policyv1alpha1.ArchFilterPolicy) {
	parsed, err := decision.ParsePolicy(obj)
	key := obj.Namespace + "/" + obj.Name
	s.mu.Lock()
	before := s.remove(obj.Namespace, obj.Name)
	s.objects[key] = obj
	if err != nil {
		s.invalid[key] = err
	} else {
		delete(s.invalid, key)
		ps := append(slices.Clone(s.byNamespace[obj.Namespace]), parsed)
		decision.SortPolicies(ps)
		s.byNamespace[obj.Namespace] = ps
	}
	listeners := s.listeners
	s.mu.Unlock()
	notify(listeners, Change{Namespace: obj.Namespace, Name: obj.Name, Before: before, After: parsed})
}

// Delete removes the policy namespace/name.
func (s *Store) Delete(namespace, name string) {
	s.mu.Lock()
	before := s.remove(namespace, name)
	delete(s.objects, namespace+"/"+name)
	delete(s.invalid, namespace+"/"+name)
	listeners := s.listeners
	s.mu.Unlock()
	notify(listeners, Change{Namespace: namespace, Name: name, Before: before})
}

// remove drops the valid policy namespace/name and returns it; s.mu is held.
func (s *Store) remove(namespace, name string) *decision.Policy {
	ps := s.byNamespace[namespace]
	i := slices.IndexFunc(ps, func(p *decision.Policy) bool { return p.Name == name })
	if i < 0 {
		return nil
	}
	before := ps[i]
	rest := slices.Delete(slices.Clone(ps), i, i+1)
	if len(rest) == 0 {
		delete(s.byNamespace, namespace)
	} else {
		s.byNamespace[namespace] = rest
	}
	return before
}

func notify(listeners []func(Change), c Change) {
	for _, fn := range listeners {
		fn(c)
	}
}

// FromObject converts what an informer delivers (an ArchFilterPolicy, an
// unstructured one, or a tombstone of either) to an ArchFilterPolicy.
func FromObject(obj any) (*policyv1alpha1.ArchFilterPolicy, error) {
	switch o := obj.(type) {
	case *policyv1alpha1.ArchFilterPolicy:
		return o, nil
	case *unstructured.Unstructured:
		out := &policyv1alpha1.ArchFilterPolicy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.UnstructuredContent(), out); err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", policyv1alpha1.Kind, o.GetNamespace(), o.GetName(), err)
		}
		return out, nil
	case cache.DeletedFinalStateUnknown:
		return FromObject(o.Obj)
	}
	return nil, fmt.Errorf("not an %s: %T", policyv1alpha1.Kind, obj)
}

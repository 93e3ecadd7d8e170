package policystore

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
)

func fakeClient(t *testing.T, objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := policyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{policyv1alpha1.SchemeGroupVersionResource: "ArchFilterPolicyList"}, objs...)
}

// TestStartWatches: with the CRD served, Start returns synced, and later
// changes reach the store.
func TestStartWatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := obj("a", "p", nil, "linux/arm64")
	p.APIVersion, p.Kind = policyv1alpha1.SchemeGroupVersion.String(), policyv1alpha1.Kind
	client := fakeClient(t, p)
	s := New()
	if !Start(ctx, client, s, Options{SyncTimeout: 10 * time.Second}) {
		t.Fatalf("not watching: %+v", s.State())
	}
	if !s.State().Watching || len(s.Lookup("a")) != 1 {
		t.Fatalf("state %+v, namespace a %v", s.State(), s.Lookup("a"))
	}
	q := obj("a", "q", map[string]string{"app": "web"})
	q.APIVersion, q.Kind = p.APIVersion, p.Kind
	content, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(q)
	if _, err := client.Resource(policyv1alpha1.SchemeGroupVersionResource).Namespace("a").Create(ctx, unstructuredOf(content), createOpts); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(s.Lookup("a")) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the created policy never reached the store: %v", names(s, "a"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStartWithoutCRD: a cluster without the CRD leaves the store empty, with
// a reason that says what to install; Start does not block.
func TestStartWithoutCRD(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{name: "CRD not installed", err: apierrors.NewNotFound(policyv1alpha1.SchemeGroupResource, ""), want: "is not installed"},
		{name: "forbidden", err: apierrors.NewForbidden(policyv1alpha1.SchemeGroupResource, "", nil), want: "grant get, list and watch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := fakeClient(t)
			client.PrependReactor("list", policyv1alpha1.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			s := New()
			if Start(ctx, client, s, Options{Recheck: time.Hour}) {
				t.Fatal("watching without the CRD")
			}
			if st := s.State(); st.Watching || !strings.Contains(st.Reason, tc.want) {
				t.Errorf("state %+v, want a reason saying %q", st, tc.want)
			}
		})
	}
}

var createOpts = metav1.CreateOptions{}

func unstructuredOf(content map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: content}
}

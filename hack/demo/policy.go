package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/test/e2e/framework"
)

// demoPolicy is the demo's ArchFilterPolicy (docs/team-by-team.md): the team
// of the namespace runs its multi-arch Deployment on the cheaper arm64 nodes
// only.
func demoPolicy() *policyv1alpha1.ArchFilterPolicy {
	return &policyv1alpha1.ArchFilterPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: policyv1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "multiarch-on-arm64"},
		Spec: policyv1alpha1.ArchFilterPolicySpec{
			PodSelector:      policyv1alpha1.MatchingLabels(map[string]string{framework.LabelApp: "multiarch"}),
			AllowedPlatforms: []string{"linux/arm64"},
		},
	}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// applyPolicy installs the ArchFilterPolicy CRD (manifests/crd) and the demo's
// policy, and waits until the scheduler reports it in force: its store holds it.
func applyPolicy(ctx context.Context, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join("manifests", "crd", "archfilter.io_archfilterpolicies.yaml"))
	if err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		return err
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the ArchFilterPolicy CRD: %w", err)
	}
	p := demoPolicy()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		return err
	}
	policies := dyn.Resource(policyv1alpha1.SchemeGroupVersionResource).Namespace(namespace)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := policies.Create(ctx, &unstructured.Unstructured{Object: content}, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil // the CRD is served a moment after it is created
	})
	if err != nil {
		return fmt.Errorf("ArchFilterPolicy %s/%s: %w", namespace, p.Name, err)
	}
	step("ArchFilterPolicy %s/%s: pods labelled %s=multiarch run on linux/arm64 only; waiting for the scheduler to report it in force", namespace, p.Name, framework.LabelApp)
	var last string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := policies.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got := &policyv1alpha1.ArchFilterPolicy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, got); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, policyv1alpha1.ConditionAccepted)
		if c == nil {
			return false, nil
		}
		last = c.Message
		return c.Status == metav1.ConditionTrue, nil
	})
	if err != nil {
		return fmt.Errorf("ArchFilterPolicy %s/%s not reported in force (%s): %w", namespace, p.Name, last, err)
	}
	info("status Accepted: %s", last)
	return nil
}

// checkPolicy fails unless every pod the demo's policy selects landed on a
// linux/arm64 node.
func checkPolicy(rows []framework.Row) error {
	n := 0
	for _, r := range rows {
		if !strings.HasPrefix(r.Pod, "multiarch-") || r.Node == "" {
			continue
		}
		n++
		if r.NodePlatform != "linux/arm64" {
			return fmt.Errorf("pod %s of the multiarch Deployment is on %s (%s), but ArchFilterPolicy %s/%s allows linux/arm64 only", r.Pod, r.Node, r.NodePlatform, namespace, demoPolicy().Name)
		}
	}
	fmt.Printf("ArchFilterPolicy %s/%s: all %d multiarch pods are on linux/arm64 nodes\n", namespace, demoPolicy().Name, n)
	return nil
}

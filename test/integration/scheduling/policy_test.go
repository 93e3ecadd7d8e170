package scheduling

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/kubernetes/test/integration/framework"
	testutils "k8s.io/kubernetes/test/integration/util"
	"k8s.io/kubernetes/test/utils/ktesting"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/test/manifests"
)

// crdPath is the ArchFilterPolicy CRD the chart and kustomize install.
const crdPath = "manifests/crd/archfilter.io_archfilterpolicies.yaml"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// startAPIServerWithCRDs starts a kube-apiserver with its whole server chain
// (the integration framework's serves no custom resources), with the
// ArchFilterPolicy CRD installed and served, as a TestContext the scheduler's
// test utilities take.
func startAPIServerWithCRDs(t *testing.T) *testutils.TestContext {
	t.Helper()
	server := kubeapiservertesting.StartTestServerOrDie(t, nil,
		[]string{"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority,StorageObjectInUseProtection"},
		framework.SharedEtcd())
	t.Cleanup(server.TearDownFn)
	cfg := rest.CopyConfig(server.ClientConfig)
	cs, err := clientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	installPolicyCRD(t, cfg)
	return &testutils.TestContext{Ctx: ktesting.Init(t), ClientSet: cs, KubeConfig: cfg, CloseFn: func() {}}
}

// installPolicyCRD creates the CRD from manifests/crd and waits until
// ArchFilterPolicy objects can be listed.
func installPolicyCRD(t *testing.T, cfg *rest.Config) {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data, err := readRepoFile(crdPath)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the CRD of %s: %v", crdPath, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(policyv1alpha1.SchemeGroupVersionResource).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("ArchFilterPolicy not served: %v", err)
	}
}

func readRepoFile(rel string) ([]byte, error) { return os.ReadFile(manifests.Path(rel)) }

// createPolicy creates p and returns it as created.
func createPolicy(t *testing.T, dyn dynamic.Interface, p *policyv1alpha1.ArchFilterPolicy) error {
	t.Helper()
	p = p.DeepCopy()
	p.APIVersion, p.Kind = policyv1alpha1.SchemeGroupVersion.String(), policyv1alpha1.Kind
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dyn.Resource(policyv1alpha1.SchemeGroupVersionResource).Namespace(p.Namespace).Create(context.Background(), &unstructured.Unstructured{Object: content}, metav1.CreateOptions{})
	return err
}

// createPolicyYAML creates the policy a user would kubectl apply.
func createPolicyYAML(t *testing.T, dyn dynamic.Interface, ns, doc string) error {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	// Strict, as kubectl apply validates: an unknown field is an error.
	_, err := dyn.Resource(policyv1alpha1.SchemeGroupVersionResource).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{FieldValidation: "Strict"})
	return err
}

// TestPolicyValidation: the CRD's schema and CEL rules refuse, at create (as
// kubectl apply), a platform that does not parse, a weight out of range and
// an invalid selector, naming the field's path; a valid policy is accepted.
func TestPolicyValidation(t *testing.T) {
	testCtx := startAPIServerWithCRDs(t)
	dyn := dynamic.NewForConfigOrDie(testCtx.KubeConfig)
	if _, err := testCtx.ClientSet.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	head := "apiVersion: archfilter.io/v1alpha1\nkind: ArchFilterPolicy\nmetadata:\n  name: p\n  namespace: team\nspec:\n"
	for _, tc := range []struct {
		name string
		spec string
		want []string // substrings of the error; nil: accepted
	}{
		{name: "valid", spec: "  podSelector:\n    matchExpressions:\n    - {key: app, operator: In, values: [web]}\n  allowedPlatforms: [linux/arm64, linux/arm/v7]\n  preferredPlatforms:\n  - {platform: linux/arm64, weight: 100}\n  failurePolicy: Fail\n"},
		{name: "platform without an architecture", spec: "  allowedPlatforms: [arm64]\n", want: []string{"spec.allowedPlatforms[0]"}},
		{name: "platform with a space", spec: "  allowedPlatforms: [\"linux/arm 64\"]\n", want: []string{"spec.allowedPlatforms[0]"}},
		{name: "preference platform", spec: "  preferredPlatforms:\n  - {platform: linux, weight: 10}\n", want: []string{"spec.preferredPlatforms[0].platform"}},
		{name: "weight above 100", spec: "  preferredPlatforms:\n  - {platform: linux/arm64, weight: 101}\n", want: []string{"spec.preferredPlatforms[0].weight"}},
		{name: "weight 0", spec: "  preferredPlatforms:\n  - {platform: linux/arm64, weight: 0}\n", want: []string{"spec.preferredPlatforms[0].weight"}},
		{name: "a platform preferred twice", spec: "  preferredPlatforms:\n  - {platform: linux/arm64, weight: 1}\n  - {platform: linux/arm64, weight: 2}\n", want: []string{"spec.preferredPlatforms[1]"}},
		{name: "selector operator", spec: "  podSelector:\n    matchExpressions:\n    - {key: app, operator: Near, values: [web]}\n", want: []string{"spec.podSelector.matchExpressions[0].operator"}},
		{name: "In without values", spec: "  podSelector:\n    matchExpressions:\n    - {key: app, operator: In}\n", want: []string{"spec.podSelector.matchExpressions[0].values"}},
		{name: "Exists with values", spec: "  podSelector:\n    matchExpressions:\n    - {key: app, operator: Exists, values: [web]}\n", want: []string{"spec.podSelector.matchExpressions[0].values"}},
		{name: "selector key", spec: "  podSelector:\n    matchExpressions:\n    - {key: \"not a key\", operator: Exists}\n", want: []string{"spec.podSelector.matchExpressions[0].key"}},
		{name: "selector label value", spec: "  podSelector:\n    matchLabels:\n      app: \"not a value!\"\n", want: []string{"spec.podSelector.matchLabels"}},
		{name: "failure policy", spec: "  failurePolicy: Sometimes\n", want: []string{"spec.failurePolicy"}},
		{name: "unknown field", spec: "  allowed: [linux/arm64]\n", want: []string{"allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := createPolicyYAML(t, dyn, "team", head+tc.spec)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("a valid policy was refused: %v", err)
				}
				_ = dyn.Resource(policyv1alpha1.SchemeGroupVersionResource).Namespace("team").Delete(context.Background(), "p", metav1.DeleteOptions{})
				return
			}
			if err == nil {
				_ = dyn.Resource(policyv1alpha1.SchemeGroupVersionResource).Namespace("team").Delete(context.Background(), "p", metav1.DeleteOptions{})
				t.Fatalf("accepted:\n%s", tc.spec)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// policyCondition reads a condition of the policy ns/name, nil while unset.
func policyCondition(ctx context.Context, dyn dynamic.Interface, ns, name, typ string) (*metav1.Condition, *policyv1alpha1.ArchFilterPolicy, error) {
	u, err := dyn.Resource(policyv1alpha1.SchemeGroupVersionResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	p := &policyv1alpha1.ArchFilterPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		return nil, nil, err
	}
	return meta.FindStatusCondition(p.Status.Conditions, typ), p, nil
}

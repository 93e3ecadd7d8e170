package scheduling

import (
	"context"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/internal/registrytest"
)

// warnings collects the warnings the API server returns, as kubectl prints them.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// TestWorkloadWarnings: with the placement companion running, creating or
// updating a workload whose images run on no node's platform, or on none its
// namespace's ArchFilterPolicy allows, returns a warning (never a denial);
// one whose images run somewhere returns none.
func TestWorkloadWarnings(t *testing.T) {
	reg := registrytest.NewMemory(t)
	img := pushImages(t, reg)
	testCtx := startAPIServerWithCRDs(t)
	ns, err := testCtx.ClientSet.CoreV1().Namespaces().Create(testCtx.Ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testCtx.NS = ns
	pc := startPlacementClusterOn(t, testCtx, "failurePolicy: Ignore\nmaxWait: 5s\n")
	pc.node("amd64", "linux", "amd64", "")
	pc.node("arm64", "linux", "arm64", "")

	dyn := dynamic.NewForConfigOrDie(testCtx.KubeConfig)
	if err := createPolicy(t, dyn, &policyv1alpha1.ArchFilterPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "arm-only"},
		Spec: policyv1alpha1.ArchFilterPolicySpec{
			PodSelector:      policyv1alpha1.MatchingLabels(map[string]string{"tier": "arm"}),
			AllowedPlatforms: []string{"linux/arm64"},
		},
	}); err != nil {
		t.Fatal(err)
	}
	pc.eventually("the policy's status (the companion's store holds it)", func(ctx context.Context) (bool, error) {
		c, _, err := policyCondition(ctx, dyn, "team", "arm-only", policyv1alpha1.ConditionAccepted)
		return err == nil && c != nil, nil
	})

	collected := &warnings{}
	cfg := rest.CopyConfig(testCtx.KubeConfig)
	cfg.WarningHandlerWithContext = collected
	cs := clientset.NewForConfigOrDie(cfg)

	template := func(image string, labels map[string]string) v1.PodTemplateSpec {
		l := map[string]string{"app": "x"}
		for k, v := range labels {
			l[k] = v
		}
		return v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: image}}}}
	}
	deployment := func(name, image string, labels map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
			Replicas: new(int32), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, Template: template(image, labels)}}
	}
	for _, tc := range []struct {
		name   string
		create func(ctx context.Context) error
		want   []string // substrings of the one warning; nil: none
	}{
		{name: "a Deployment whose image runs on no node", create: func(ctx context.Context) error {
			_, err := cs.AppsV1().Deployments("team").Create(ctx, deployment("s390x", img.s390xIndex, nil), metav1.CreateOptions{})
			return err
		}, want: []string{"archfilter: Deployment team/s390x", "linux/s390x", "no node of the cluster"}},
		{name: "a Job whose image its policy does not allow", create: func(ctx context.Context) error {
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "amd"}, Spec: batchv1.JobSpec{Template: template(img.amd64Only, map[string]string{"tier": "arm"})}}
			job.Spec.Template.Spec.RestartPolicy = v1.RestartPolicyNever
			_, err := cs.BatchV1().Jobs("team").Create(ctx, job, metav1.CreateOptions{})
			return err
		}, want: []string{"archfilter: Job team/amd", "ArchFilterPolicy team/arm-only"}},
		{name: "a Deployment whose image runs somewhere", create: func(ctx context.Context) error {
			_, err := cs.AppsV1().Deployments("team").Create(ctx, deployment("multi", img.multiArch, map[string]string{"tier": "arm"}), metav1.CreateOptions{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			collected.take()
			if err := tc.create(context.Background()); err != nil {
				t.Fatalf("the workload was refused (warnings must never deny): %v", err)
			}
			got := collected.take()
			if tc.want == nil {
				if len(got) != 0 {
					t.Errorf("warnings %q, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("warnings %q, want one", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("warning %q does not say %q", got[0], w)
				}
			}
		})
	}
}

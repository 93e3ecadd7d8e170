package charttest

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/archfilter/archfilter/test/toolscache"
)

// deployImage is the IMAGE make deploy is given in these tests.
const deployImage = "registry.example.com/archfilter/archfilter-scheduler"

// deployScript returns a client of the test cluster and a function running
// make deploy's script (hack/deploy/deploy.sh ACTION) for overlay against it.
func deployScript(t *testing.T, overlay string) (kubernetes.Interface, func(action string, env ...string) (string, error)) {
	kubeconfig, restConfig := cluster(t)
	// The main line's kubectl from the tools cache (make test-chart builds it), else PATH's.
	kubectl := os.Getenv("KUBECTL")
	if kubectl == "" {
		kubectl = "kubectl"
		if p, ok := toolscache.Built(repoRoot(), "kubectl"); ok {
			kubectl = p
		}
	}
	cache := t.TempDir()
	return kubernetes.NewForConfigOrDie(restConfig), func(action string, env ...string) (string, error) {
		cmd := exec.Command("hack/deploy/deploy.sh", action)
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), append(env, "KUBECONFIG="+kubeconfig, "KUBECTL="+kubectl,
			"IMAGE="+deployImage, "VERSION=v9.8.7", "OVERLAY="+overlay, "ARCHFILTER_CACHE="+cache)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// TestDeployUndeploy runs make deploy's and make undeploy's script against a
// real API server: the overlay applied with the image given; undeploy refuses
// while a pod still names the scheduler, listing it, and once it is gone
// removes everything, the lease included.
func TestDeployUndeploy(t *testing.T) {
	kube, deploy := deployScript(t, "secondary")
	ctx := t.Context()
	t.Cleanup(func() { _, _ = deploy("delete", "FORCE=1") })

	if out, err := deploy("apply"); err != nil {
		t.Fatalf("deploy.sh apply: %v\n%s", err, out)
	}
	d, err := kube.AppsV1().Deployments(Namespace).Get(ctx, "archfilter-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Spec.Template.Spec.Containers[0].Image, deployImage+":v9.8.7"; got != want {
		t.Errorf("deployed image %q, want %q", got, want)
	}

	// A pod that names the scheduler: nothing schedules it here, as nothing
	// would once archfilter is gone.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "undeploy-"}}
	ns, err = kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "waits-for-archfilter", Namespace: ns.Name},
		Spec: corev1.PodSpec{
			SchedulerName: "archfilter-scheduler",
			Containers:    []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}},
		},
	}
	if _, err := kube.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := deploy("delete")
	if err == nil {
		t.Fatalf("undeploy went ahead with a pod naming the scheduler:\n%s", out)
	}
	if !strings.Contains(out, ns.Name+"/waits-for-archfilter") || !strings.Contains(out, "FORCE=1") {
		t.Errorf("undeploy's refusal does not list the pod and the way out:\n%s", out)
	}
	if _, err := kube.AppsV1().Deployments(Namespace).Get(ctx, "archfilter-scheduler", metav1.GetOptions{}); err != nil {
		t.Errorf("the refused undeploy removed the Deployment: %v", err)
	}

	if err := kube.CoreV1().Pods(ns.Name).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns.Name).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := deploy("delete"); err != nil {
		t.Fatalf("deploy.sh delete: %v\n%s", err, out)
	}
	for what, get := range map[string]func() error{
		"Deployment": func() error {
			_, err := kube.AppsV1().Deployments(Namespace).Get(ctx, "archfilter-scheduler", metav1.GetOptions{})
			return err
		},
		"ClusterRole": func() error {
			_, err := kube.RbacV1().ClusterRoles().Get(ctx, "archfilter-scheduler", metav1.GetOptions{})
			return err
		},
		"Lease": func() error {
			_, err := kube.CoordinationV1().Leases(Namespace).Get(ctx, "archfilter-scheduler", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("%s after undeploy: %v, want NotFound", what, err)
		}
	}
}

// TestDeployUndeployPlacement: make deploy OVERLAY=placement applies the
// companion with its own image (IMAGE's -placement sibling), and make undeploy
// leaves nothing of the mode behind: the webhook configuration it owns is
// deleted and no pod keeps its scheduling gate (bin/archfilter-placement
// --remove-gates, before the overlay is deleted).
func TestDeployUndeployPlacement(t *testing.T) {
	bin := repoPath("bin/archfilter-placement")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: make test-chart builds it (make build-placement)", err)
	}
	kube, deploy := deployScript(t, "placement")
	ctx := t.Context()
	env := "PLACEMENT_BIN=" + bin
	t.Cleanup(func() { _, _ = deploy("delete", env) })

	if out, err := deploy("apply"); err != nil {
		t.Fatalf("deploy.sh apply: %v\n%s", err, out)
	}
	d, err := kube.AppsV1().Deployments(Namespace).Get(ctx, "archfilter-placement", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Spec.Template.Spec.Containers[0].Image, "registry.example.com/archfilter/archfilter-placement:v9.8.7"; got != want {
		t.Errorf("deployed image %q, want %q", got, want)
	}

	// What a running companion leaves: a pod it gated and the webhook
	// configuration it owns (KWOK runs no real companion here). The pod comes
	// first, so that creating it does not wait for the unreachable webhook.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "undeploy-placement-"}}
	ns, err = kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: ns.Name},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/other"}, {Name: placementGate}},
			Containers:      []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}},
		},
	}
	if _, err := kube.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	url := "https://127.0.0.1:1/mutate"
	webhook := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "archfilter-placement"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "placement.archfilter.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, webhook, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if out, err := deploy("delete", env); err != nil {
		t.Fatalf("deploy.sh delete: %v\n%s", err, out)
	}
	got, err := kube.CoreV1().Pods(ns.Name).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []corev1.PodSchedulingGate{{Name: "example.com/other"}}; !slices.Equal(got.Spec.SchedulingGates, want) {
		t.Errorf("gates after undeploy %v, want %v (only the mode's gate removed)", got.Spec.SchedulingGates, want)
	}
	for what, get := range map[string]func() error{
		"MutatingWebhookConfiguration": func() error {
			_, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "archfilter-placement", metav1.GetOptions{})
			return err
		},
		"Deployment": func() error {
			_, err := kube.AppsV1().Deployments(Namespace).Get(ctx, "archfilter-placement", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("%s after undeploy: %v, want NotFound", what, err)
		}
	}
}

// placementGate is the scheduling gate the placement mode adds
// (pkg/placement.GateName; this module does not import archfilter's).
const placementGate = "archfilter.io/placement"

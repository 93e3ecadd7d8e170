package e2enode

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/internal/kubectlplugin"
	"github.com/archfilter/archfilter/pkg/misplaced"
	"github.com/archfilter/archfilter/test/e2e/framework"
)

// A Deployment the default scheduler placed before archfilter was installed.
const (
	misplacedNS  = "e2e-misplaced"
	misplacedApp = "legacy-arm64"
)

// createMisplaced creates, before the chart is installed, a Deployment of the
// arm64-only program that prefers the real amd64 node (a preferred node
// affinity, as teams write for a zone or a pool): the stock default-scheduler
// binds its pod there and the kernel refuses the binary. The container's
// terminationMessagePolicy FallbackToLogsOnError puts the runtime's "exec
// format error" in the status. It returns the pod once its container failed so.
func createMisplaced(ctx context.Context, t *testing.T, cs kubernetes.Interface, e env, image string) *v1.Pod {
	t.Helper()
	if err := framework.ResetNamespace(ctx, cs, misplacedNS); err != nil {
		t.Fatal(err)
	}
	return createOnRealNode(ctx, t, cs, e, misplacedApp, image, true)
}

// createOnRealNode creates in misplacedNS a Deployment of image that prefers the
// real node, and returns its pod once bound there and, with execFormat, once its
// container failed with exec format error, else once it runs.
func createOnRealNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, e env, app, image string, execFormat bool) *v1.Pod {
	t.Helper()
	labels := map[string]string{framework.LabelApp: app}
	spec := helloPod(app, image, "", nil, v1.RestartPolicyAlways).Spec
	spec.Containers[0].TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
		Weight: 100, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{
			Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{e.node}}}}}}}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: misplacedNS},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
	if _, err := cs.AppsV1().Deployments(misplacedNS).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	what := app + " running on the real node"
	if execFormat {
		what = app + " failing with exec format error on the real node"
	}
	var p *v1.Pod
	poll(ctx, t, what, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(misplacedNS).List(ctx, metav1.ListOptions{LabelSelector: framework.LabelApp + "=" + app})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Errorf("%d pods (err %v)", len(pods.Items), err)
		}
		p = &pods.Items[0]
		if p.Spec.NodeName != e.node {
			return false, fmt.Errorf("bound to %q, want the real node %s", p.Spec.NodeName, e.node)
		}
		for _, c := range p.Status.ContainerStatuses {
			if !execFormat && c.State.Running != nil && c.ImageID != "" {
				return true, nil
			}
			for _, st := range []v1.ContainerState{c.State, c.LastTerminationState} {
				if execFormat && st.Terminated != nil && misplaced.IsExecFormatError(st.Terminated.Message) {
					return true, nil
				}
			}
		}
		return false, fmt.Errorf("not yet: %+v", p.Status.ContainerStatuses)
	})
	return p
}

// podEvents lists the reasons and messages of the events on pod (this UID)
// whose reason starts with prefix.
func podEvents(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod *v1.Pod, prefix string) []string {
	t.Helper()
	sel := fields.Set{"involvedObject.name": pod.Name, "involvedObject.uid": string(pod.UID)}.AsSelector().String()
	evs, err := cs.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs.Items {
		if strings.HasPrefix(ev.Reason, prefix) {
			out = append(out, ev.Reason+": "+ev.Message)
		}
	}
	return out
}

// waitEvent waits for an event on pod whose "reason: message" contains want.
func waitEvent(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod *v1.Pod, want string) string {
	t.Helper()
	var got string
	poll(ctx, t, fmt.Sprintf("an event %q on %s", want, pod.Name), func(ctx context.Context) (bool, error) {
		for _, ev := range podEvents(ctx, t, cs, pod, "ArchFilter") {
			if strings.Contains(ev, want) {
				got = ev
				return true, nil
			}
		}
		return false, nil
	})
	return got
}

// stillThere reports whether pod (this UID) exists and is not being deleted.
func stillThere(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod *v1.Pod) bool {
	t.Helper()
	now, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	return err == nil && now.UID == pod.UID && now.DeletionTimestamp == nil
}

// reportRunning runs kubectl archfilter report --running as a user would, with
// the registry's CA, and checks it names the pod, its node and image, both ways.
func reportRunning(ctx context.Context, t *testing.T, e env, p *v1.Pod, image string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := kubectlplugin.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"report", "--running", "-n", misplacedNS, "-o", "csv", "--kubeconfig", e.kubeconfig,
		"--registry-ca", e.registry + "=" + e.registryCA})
	code := kubectlplugin.ExitCode(cmd.ExecuteContext(ctx))
	t.Logf("kubectl archfilter report --running -n %s -o csv (exit status %d):\n%s%s", misplacedNS, code, out.String(), errOut.String())
	if code != kubectlplugin.ExitFailed {
		t.Errorf("exit status %d, want %d (a pod on a node that cannot run it)", code, kubectlplugin.ExitFailed)
	}
	for _, kind := range misplaced.Kinds {
		want := strings.Join([]string{"Deployment", misplacedNS, misplacedApp, p.Name, e.node, "linux/amd64", string(kind), "hello", image}, ",")
		if !strings.Contains(out.String(), want) {
			t.Errorf("report --running lacks %q", want)
		}
	}
	return out.String()
}

// waitHealed waits until the companion (--misplaced=evict) has evicted the pod
// and its replacement, gated by the webhook and given the arm64 affinity, is
// bound to an arm64 node; it returns the replacement and the events on the
// evicted pod.
func waitHealed(ctx context.Context, t *testing.T, cs kubernetes.Interface, old *v1.Pod) (*v1.Pod, []string) {
	t.Helper()
	var now *v1.Pod
	poll(ctx, t, misplacedApp+" evicted and placed again on an arm64 node", func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(misplacedNS).List(ctx, metav1.ListOptions{LabelSelector: framework.LabelApp + "=" + misplacedApp})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.UID != old.UID && p.DeletionTimestamp == nil && p.Spec.NodeName != "" && strings.HasPrefix(nodeArch(ctx, cs, p.Spec.NodeName), "arm64") {
				now = p
				return true, nil
			}
		}
		return false, fmt.Errorf("%d pods, none new on an arm64 node", len(pods.Items))
	})
	reasons := podEvents(ctx, t, cs, old, "ArchFilterMisplaced")
	for _, want := range []string{"ArchFilterMisplaced: ", "ArchFilterMisplacedEvicted: "} {
		if !containsPrefix(reasons, want) {
			t.Errorf("no %s event on the evicted pod %s (events %q)", strings.TrimSuffix(want, ": "), old.Name, reasons)
		}
	}
	return now, reasons
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

package scheduling

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	testutils "k8s.io/kubernetes/test/integration/util"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/internal/placement/app"
	"github.com/archfilter/archfilter/internal/placement/controller"
	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/placement"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/test/manifests"
)

// placementCluster is an apiserver with the stock scheduler (default
// profile, no ArchFilter) and the placement mode running in-process, its
// webhook called by the apiserver over TLS at a loopback URL.
type placementCluster struct {
	*cluster
	opts *app.Options
	stop context.CancelFunc
	done chan error
}

func startPlacementCluster(t *testing.T, args string, set ...func(*app.Options)) *placementCluster {
	t.Helper()
	return startPlacementClusterOn(t, testutils.InitTestAPIServer(t, "placement", nil), args, set...)
}

// startPlacementClusterOn is startPlacementCluster on the API server of
// testCtx (one that serves the CRDs: startAPIServerWithCRDs).
func startPlacementClusterOn(t *testing.T, testCtx *testutils.TestContext, args string, set ...func(*app.Options)) *placementCluster {
	t.Helper()
	testCtx = testutils.InitTestSchedulerWithOptions(t, testCtx, 0)
	testutils.SyncSchedulerInformerFactory(testCtx)
	go testCtx.Scheduler.Run(testCtx.SchedulerCtx)
	t.Cleanup(testCtx.SchedulerCloseFn)

	argsFile := filepath.Join(t.TempDir(), "args.yaml")
	if err := os.WriteFile(argsFile, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: ArchFilterArgs\n"+args), 0o600); err != nil {
		t.Fatal(err)
	}
	o := app.NewOptions()
	// The companion runs as the overlay's ServiceAccount with the overlay's
	// RBAC, so the test fails if manifests/overlays/placement lacks a
	// permission the code uses. Its certificate goes into the overlay's
	// namespace, in the Secret its Role names.
	o.RestConfig = rest.CopyConfig(testCtx.KubeConfig)
	o.RestConfig.Impersonate = rest.ImpersonationConfig{UserName: applyPlacementRBAC(t, testCtx.ClientSet)}
	o.ArgsFile = argsFile
	o.WebhookURL = "https://" + freeLoopbackAddr(t)
	o.Namespace = metav1.NamespaceSystem
	o.LeaderElect = true // the overlay's setting, with its Lease RBAC
	o.MaxGated = 20 * time.Second
	for _, f := range set {
		f(o)
	}
	pc := &placementCluster{cluster: &cluster{t: t, ctx: testCtx.Ctx, cs: testCtx.ClientSet, ns: testCtx.NS.Name}, opts: o}
	pc.start()
	t.Cleanup(pc.shutdown)
	return pc
}

// applyPlacementRBAC creates manifests/overlays/placement's ServiceAccount and
// RBAC objects and returns the ServiceAccount's user name.
func applyPlacementRBAC(t *testing.T, cs clientset.Interface) string {
	t.Helper()
	objs, _, err := manifests.Load(manifests.Path("manifests/overlays/placement"))
	if err != nil {
		t.Fatal(err)
	}
	return applyRBAC(t, cs, "manifests/overlays/placement", objs)
}

// applyRBAC creates the ServiceAccount and RBAC objects among objs (from the
// overlay dir) and returns the ServiceAccount's user name, once the
// apiserver's authorizer grants what they say.
func applyRBAC(t *testing.T, cs clientset.Interface, dir string, objs []runtime.Object) string {
	t.Helper()
	ctx := context.Background()
	eventually := func(what string, create func() error) {
		// kube-system appears shortly after the apiserver starts.
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			err := create()
			return err == nil || apierrors.IsAlreadyExists(err), nil
		})
		if err != nil {
			t.Fatalf("creating %s: %v", what, err)
		}
	}
	user := ""
	for _, sa := range manifests.Of[*v1.ServiceAccount](objs) {
		eventually("ServiceAccount "+sa.Name, func() error {
			_, err := cs.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{})
			return err
		})
		user = "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
	}
	for _, r := range manifests.Of[*rbacv1.ClusterRole](objs) {
		eventually("ClusterRole "+r.Name, func() error { _, err := cs.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); return err })
	}
	for _, b := range manifests.Of[*rbacv1.ClusterRoleBinding](objs) {
		eventually("ClusterRoleBinding "+b.Name, func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
			return err
		})
	}
	for _, r := range manifests.Of[*rbacv1.Role](objs) {
		eventually("Role "+r.Name, func() error {
			_, err := cs.RbacV1().Roles(r.Namespace).Create(ctx, r, metav1.CreateOptions{})
			return err
		})
	}
	for _, b := range manifests.Of[*rbacv1.RoleBinding](objs) {
		eventually("RoleBinding "+b.Name, func() error {
			_, err := cs.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{})
			return err
		})
	}
	if user == "" {
		t.Fatalf("%s has no ServiceAccount", dir)
	}
	waitAuthorized(t, cs, user, objs)
	return user
}

// waitAuthorized waits until the apiserver's authorizer grants user the first
// verb of every rule of the Roles and ClusterRoles in objs: RBAC objects take
// effect when the authorizer's informers see them, which a busy machine delays.
func waitAuthorized(t *testing.T, cs clientset.Interface, user string, objs []runtime.Object) {
	t.Helper()
	var attrs []authorizationv1.ResourceAttributes
	add := func(ns string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			a := authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}
			if len(r.ResourceNames) > 0 {
				a.Name = r.ResourceNames[0]
			}
			attrs = append(attrs, a)
		}
	}
	for _, r := range manifests.Of[*rbacv1.ClusterRole](objs) {
		add("", r.Rules)
	}
	for _, r := range manifests.Of[*rbacv1.Role](objs) {
		add(r.Namespace, r.Rules)
	}
	for _, a := range attrs {
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &a}}
			got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			return err == nil && got.Status.Allowed, nil
		})
		if err != nil {
			t.Fatalf("%s is not granted %+v: %v", user, a, err)
		}
	}
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs the placement mode and waits until the apiserver gates a probe
// pod through its webhook.
func (pc *placementCluster) start() {
	pc.t.Helper()
	ctx, cancel := context.WithCancel(pc.ctx)
	pc.stop, pc.done = cancel, make(chan error, 1)
	go func() { pc.done <- app.Run(ctx, pc.opts) }()
	pc.eventually("the webhook gates pods", func(ctx context.Context) (bool, error) {
		select {
		case err := <-pc.done:
			return false, fmt.Errorf("placement mode exited: %w", err)
		default:
		}
		probe := st.MakePod().Namespace(pc.ns).GenerateName("probe-").Container("registry.invalid/probe").Obj()
		created, err := pc.cs.CoreV1().Pods(pc.ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		return placement.HasGate(created), nil
	})
}

// shutdown stops the placement mode (its gates stay, as after a crash).
func (pc *placementCluster) shutdown() {
	if pc.stop == nil {
		return
	}
	pc.stop()
	if err := <-pc.done; err != nil {
		pc.t.Errorf("placement mode: %v", err)
	}
	pc.stop = nil
}

// placed waits until pod name has lost the placement gate and returns it.
func (pc *placementCluster) placed(name string) *v1.Pod {
	pc.t.Helper()
	var pod *v1.Pod
	pc.eventually("pod "+name+" loses the placement gate", func(ctx context.Context) (bool, error) {
		p, err := pc.cs.CoreV1().Pods(pc.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return !placement.HasGate(p), nil
	})
	return pod
}

// gatedPod creates a pod that carries the placement gate itself, as one gated
// while no controller ran would.
func (pc *placementCluster) gatedPod(name string, images ...string) *v1.Pod {
	pc.t.Helper()
	return pc.defaultPod(name, images, func(p *v1.Pod) {
		p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: placement.GateName}}
	})
}

// defaultPod creates a pod for the stock scheduler.
func (pc *placementCluster) defaultPod(name string, images []string, mutate ...func(*v1.Pod)) *v1.Pod {
	pc.t.Helper()
	return pc.pod(name, images, append([]func(*v1.Pod){func(p *v1.Pod) { p.Spec.SchedulerName = v1.DefaultSchedulerName }}, mutate...)...)
}

// events waits for an event with reason on pod name and returns the messages.
func (pc *placementCluster) events(name, reason string) []string {
	pc.t.Helper()
	var msgs []string
	pc.eventually("event "+reason+" on pod "+name, func(context.Context) (bool, error) {
		msgs = pc.eventMessages(name, reason)
		return len(msgs) > 0, nil
	})
	return msgs
}

func requiredArchs(pod *v1.Pod) []string {
	c := podplatform.OwnConstraintOf(pod)
	if c.Arch == nil {
		return nil
	}
	archs := c.Arch.UnsortedList()
	slices.Sort(archs)
	return archs
}

// TestPlacementModeWithStockScheduler: the default scheduler, which knows
// nothing of ArchFilter, puts pods on nodes that run their images because the
// placement mode wrote the affinity; every way a pod can go wrong ends with it
// ungated and an event saying why.
func TestPlacementModeWithStockScheduler(t *testing.T) {
	reg := registrytest.NewMemory(t)
	img := pushImages(t, reg)
	pc := startPlacementCluster(t, "failurePolicy: Ignore\nmaxWait: 5s\n")
	mixedNodes(pc.cluster)

	t.Run("images land on their platforms", func(t *testing.T) {
		for _, tc := range []struct {
			name, image, wantNode string
			wantArchs             []string
		}{
			{name: "arm64-only", image: img.arm64Only, wantNode: "arm64", wantArchs: []string{"arm64"}},
			{name: "amd64-only", image: img.amd64Only, wantNode: "amd64", wantArchs: []string{"amd64"}},
			{name: "s390x", image: img.s390xIndex, wantNode: "s390x", wantArchs: []string{"s390x"}},
		} {
			created := pc.defaultPod(tc.name, []string{tc.image})
			if !placement.HasGate(created) {
				t.Errorf("pod %s was created without the placement gate: %v", tc.name, created.Spec.SchedulingGates)
			}
			pod := pc.placed(tc.name)
			if got := requiredArchs(pod); !slices.Equal(got, tc.wantArchs) {
				t.Errorf("pod %s requires archs %v, want %v (affinity %v)", tc.name, got, tc.wantArchs, pod.Spec.Affinity)
			}
			if got := pc.scheduledNode(tc.name); got != tc.wantNode {
				t.Errorf("pod %s scheduled on %s, want %s", tc.name, got, tc.wantNode)
			}
			pc.events(tc.name, controller.ReasonPlaced)
		}
	})

	t.Run("windows image gets os and build", func(t *testing.T) {
		pc.defaultPod("windows-only", []string{img.windowsOnly})
		pod := pc.placed("windows-only")
		if got := pc.scheduledNode("windows-only"); got != "windows" {
			t.Errorf("scheduled on %s, want windows (affinity %v)", got, pod.Spec.Affinity)
		}
		if !strings.Contains(pod.Spec.Affinity.String(), v1.LabelWindowsBuild) {
			t.Errorf("affinity has no %s term: %v", v1.LabelWindowsBuild, pod.Spec.Affinity)
		}
	})

	t.Run("image that does not resolve fails open", func(t *testing.T) {
		pc.defaultPod("missing", []string{reg.Host() + "/no-such-repo:v1"})
		pod := pc.placed("missing")
		if pod.Spec.Affinity != nil {
			t.Errorf("affinity written for an image that did not resolve: %v", pod.Spec.Affinity)
		}
		msgs := pc.events("missing", controller.ReasonFailedOpen)
		if !strings.Contains(msgs[0], "no-such-repo") {
			t.Errorf("%s events %q, want one naming the image", controller.ReasonFailedOpen, msgs)
		}
		pc.scheduledNode("missing")
	})

	t.Run("conflict with the pod's own constraint stays Pending, as under the plugin", func(t *testing.T) {
		pc.defaultPod("conflict", []string{img.arm64Only}, func(p *v1.Pod) {
			p.Spec.NodeSelector = map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64"}
		})
		pod := pc.placed("conflict")
		if pod.Spec.Affinity == nil {
			t.Fatalf("no affinity written: the stock scheduler would put the pod on amd64, where its image does not run")
		}
		pc.events("conflict", controller.ReasonRejected)
		// The stock scheduler finds no node the written affinity admits.
		if msg := pc.unschedulableMessage("conflict"); !strings.Contains(msg, "node affinity") {
			t.Errorf("unschedulable because %q, want the node affinity named", msg)
		}
		rec, ok, err := decision.RecordOf(pod)
		if !ok || err != nil || rec.Outcome != decision.OutcomeRejected || !strings.Contains(rec.Message, decision.ReasonOwnConstraintConflict) {
			t.Errorf("recorded %+v (%v), want the rejection", rec, err)
		}
	})

	t.Run("declared platforms: the annotation decides, as under the plugin", func(t *testing.T) {
		pc.defaultPod("declared", []string{img.amd64Only}, func(p *v1.Pod) {
			p.Annotations = map[string]string{annotations.Platforms: "linux/s390x"}
		})
		pod := pc.placed("declared")
		if got := requiredArchs(pod); !slices.Equal(got, []string{"s390x"}) {
			t.Errorf("requires archs %v, want [s390x] (affinity %v)", got, pod.Spec.Affinity)
		}
		if got := pc.scheduledNode("declared"); got != "s390x" {
			t.Errorf("scheduled on %s, want s390x", got)
		}
	})

	t.Run("DaemonSet pods are not gated under daemonSetPolicy Skip", func(t *testing.T) {
		created := pc.defaultPod("agent", []string{img.arm64Only}, daemonSetPod("amd64"))
		if placement.HasGate(created) {
			t.Errorf("DaemonSet pod gated: %v", created.Spec.SchedulingGates)
		}
		if got := pc.scheduledNode("agent"); got != "amd64" {
			t.Errorf("scheduled on %s, want amd64 (its node pin)", got)
		}
	})

	t.Run("existing terms are ANDed", func(t *testing.T) {
		pc.defaultPod("anded", []string{img.multiArch}, func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"arm64", "s390x"}}}}},
			}}}
		})
		pod := pc.placed("anded")
		if got := requiredArchs(pod); !slices.Equal(got, []string{"amd64", "arm64"}) {
			t.Errorf("requires archs %v, want [amd64 arm64] (affinity %v)", got, pod.Spec.Affinity)
		}
		if got := pc.scheduledNode("anded"); got != "arm64" {
			t.Errorf("scheduled on %s, want arm64 (its own hostname term AND the image's platforms)", got)
		}
	})

	t.Run("excluded namespace is not gated", func(t *testing.T) {
		p := st.MakePod().Namespace(metav1.NamespaceSystem).Name("system-pod").Container(img.arm64Only).Obj()
		created, err := pc.cs.CoreV1().Pods(metav1.NamespaceSystem).Create(pc.ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		if placement.HasGate(created) {
			t.Errorf("pod in %s gated", metav1.NamespaceSystem)
		}
	})

	t.Run("restart picks up gated pods", func(t *testing.T) {
		pc.shutdown()
		pc.gatedPod("gated-while-down", img.arm64Only)
		pc.start()
		pod := pc.placed("gated-while-down")
		if got := requiredArchs(pod); !slices.Equal(got, []string{"arm64"}) {
			t.Errorf("requires archs %v, want [arm64]", got)
		}
	})

	t.Run("uninstall removes every gate", func(t *testing.T) {
		pc.shutdown()
		for i := range 3 {
			pc.gatedPod(fmt.Sprintf("left-gated-%d", i), img.arm64Only)
		}
		uninstall := *pc.opts
		uninstall.RemoveGates = true
		if err := app.Run(pc.ctx, &uninstall); err != nil {
			t.Fatalf("--remove-gates: %v", err)
		}
		pods, err := pc.cs.CoreV1().Pods(metav1.NamespaceAll).List(pc.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if placement.HasGate(&p) {
				t.Errorf("pod %s/%s still gated after uninstall", p.Namespace, p.Name)
			}
		}
		_, err = pc.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(pc.ctx, pc.opts.WebhookConfigName, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("webhook configuration after uninstall: %v, want NotFound", err)
		}
		pc.events("left-gated-0", controller.ReasonGateRemoved)
		for i := range 3 {
			pc.scheduledNode(fmt.Sprintf("left-gated-%d", i))
		}
	})
}

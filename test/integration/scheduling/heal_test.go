package scheduling

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	testutils "k8s.io/kubernetes/test/integration/util"

	"github.com/archfilter/archfilter/internal/placement/app"
	"github.com/archfilter/archfilter/internal/placement/heal"
	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/test/manifests"
)

// TestHealMode runs the companion in --mode=heal (the misplaced-pod watch
// alone, as the heal overlay and the chart's heal.enabled run it) as the heal
// overlay's ServiceAccount with exactly the overlay's RBAC, beside no
// scheduler: a pod of an amd64-only image bound to a linux/arm64 node gets
// the ArchFilterMisplaced event; the companion leads on its own Lease,
// archfilter-heal, serves /healthz and authenticated /metrics over HTTPS,
// and creates nothing of the placement mode's (no webhook configuration, no
// certificate Secret, no gate on a new pod).
func TestHealMode(t *testing.T) {
	testCtx := testutils.InitTestAPIServer(t, "heal", nil)
	cs, ns := testCtx.ClientSet, testCtx.NS.Name
	c := &cluster{t: t, ctx: testCtx.Ctx, cs: cs, ns: ns}

	objs, _, err := manifests.Load(manifests.Path(manifests.HealOverlay))
	if err != nil {
		t.Fatal(err)
	}
	var healObjs []runtime.Object
	for _, o := range objs {
		if manifests.IsHeal(o) {
			healObjs = append(healObjs, o)
		}
	}
	user := applyRBAC(t, cs, manifests.HealOverlay, healObjs)

	reg := registrytest.NewMemory(t)
	amd := reg.Fixtures(t).Image("heal/amd:v1", registrytest.OCI, "linux/amd64")
	for _, n := range []*v1.Node{
		st.MakeNode().Name("arm-node").Label(v1.LabelOSStable, "linux").Label(v1.LabelArchStable, "arm64").Obj(),
		st.MakeNode().Name("amd-node").Label(v1.LabelOSStable, "linux").Label(v1.LabelArchStable, "amd64").Obj(),
	} {
		if _, err := cs.CoreV1().Nodes().Create(c.ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	misplaced := st.MakePod().Namespace(ns).Name("misplaced").Container(amd.Ref).Node("arm-node").Obj()
	placed := st.MakePod().Namespace(ns).Name("placed").Container(amd.Ref).Node("amd-node").Obj()
	for _, p := range []*v1.Pod{misplaced, placed} {
		if _, err := cs.CoreV1().Pods(ns).Create(c.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	o := app.NewOptions()
	o.Mode, o.Misplaced = app.ModeHeal, string(heal.ModeReport)
	o.RestConfig = rest.CopyConfig(testCtx.KubeConfig)
	o.RestConfig.Impersonate = rest.ImpersonationConfig{UserName: user}
	o.Namespace = metav1.NamespaceSystem
	o.LeaderElect = true // the overlay's setting, with its Lease RBAC
	o.InsecureRegistries = []string{reg.Host()}
	o.MetricsAddr = freeLoopbackAddr(t)
	o.ServiceName = manifests.HealName
	ctx, stop := context.WithCancel(c.ctx)
	exited := make(chan struct{})
	var runErr error
	go func() {
		defer close(exited)
		runErr = app.Run(ctx, o)
	}()
	t.Cleanup(func() {
		stop()
		<-exited
		if runErr != nil {
			t.Errorf("heal mode: %v", runErr)
		}
	})

	msgs := c.eventMessagesEventually("misplaced", heal.ReasonMisplaced, exited)
	if !strings.Contains(msgs[0], "arm-node") || !strings.Contains(msgs[0], "linux/arm64") {
		t.Errorf("event %q does not name the node and its platform", msgs[0])
	}
	lease, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(c.ctx, app.LeaseNameFor(app.ModeHeal), metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("Lease %s: %v, %v; want one held", app.LeaseNameFor(app.ModeHeal), lease, err)
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(c.ctx, o.WebhookConfigName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("MutatingWebhookConfiguration %s: %v, want none in heal mode", o.WebhookConfigName, err)
	}
	if _, err := cs.CoreV1().Secrets(metav1.NamespaceSystem).Get(c.ctx, o.CertSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret %s: %v, want none in heal mode", o.CertSecret, err)
	}
	created, err := cs.CoreV1().Pods(ns).Create(c.ctx, st.MakePod().Namespace(ns).Name("new").Container(amd.Ref).Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Spec.SchedulingGates) > 0 {
		t.Errorf("a new pod is gated in heal mode: %v", created.Spec.SchedulingGates)
	}
	if n := len(c.eventMessages("placed", heal.ReasonMisplaced)); n > 0 {
		t.Errorf("the pod on a node that runs it got %d %s events", n, heal.ReasonMisplaced)
	}

	// Metrics over HTTPS with the in-memory certificate: /healthz anonymous,
	// /metrics refused without a token.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/metrics": http.StatusUnauthorized} {
		resp, err := client.Get("https://" + o.MetricsAddr + path)
		if err != nil {
			t.Errorf("GET %s: %v", path, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d (%.100q)", path, resp.StatusCode, want, body)
		}
	}
}

// eventMessagesEventually waits for an event with reason on pod name, failing
// early if the companion exits (exited is closed).
func (c *cluster) eventMessagesEventually(name, reason string, exited <-chan struct{}) []string {
	c.t.Helper()
	var msgs []string
	c.eventually(fmt.Sprintf("event %s on pod %s", reason, name), func(context.Context) (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("the companion exited")
		default:
		}
		msgs = c.eventMessages(name, reason)
		return len(msgs) > 0, nil
	})
	return msgs
}

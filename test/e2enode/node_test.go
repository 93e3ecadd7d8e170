// Package e2enode runs archfilter, and the failure it prevents, on a real
// node: a kubelet on containerd and runc beside KWOK's fake nodes of other
// architectures (hack/node/node.sh brings them up; `make e2e-node` runs it
// all). Without E2E_NODE_KUBECONFIG the tests skip.
package e2enode

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

// env is what hack/node/node.sh set up, from E2E_NODE_* variables.
type env struct {
	kubeconfig string
	node       string // the real node's name
	nodeIP     string
	registry   string // host:port of the TLS registry
	registryCA string // its CA (PEM file)
	pause      string // containerd's sandbox_image reference
	image      string // archfilter-scheduler image just built (ref@digest)
	// imagePlatforms are the platforms make image built it for (comma-separated).
	imagePlatforms string
	kubectl        string
	outDir         string // where the outcome table is written
}

func getenv(t *testing.T) env {
	t.Helper()
	e := env{
		kubeconfig:     os.Getenv("E2E_NODE_KUBECONFIG"),
		node:           os.Getenv("E2E_NODE_NAME"),
		nodeIP:         os.Getenv("E2E_NODE_IP"),
		registry:       os.Getenv("E2E_NODE_REGISTRY"),
		registryCA:     os.Getenv("E2E_NODE_REGISTRY_CA"),
		pause:          os.Getenv("E2E_NODE_PAUSE_IMAGE"),
		image:          os.Getenv("E2E_NODE_ARCHFILTER_IMAGE"),
		imagePlatforms: os.Getenv("E2E_NODE_IMAGE_PLATFORMS"),
		kubectl:        os.Getenv("E2E_NODE_KUBECTL"),
		outDir:         os.Getenv("E2E_NODE_OUT"),
	}
	if e.kubeconfig == "" {
		t.Skip("needs a real node: run `make e2e-node` (hack/node/node.sh brings it up and sets E2E_NODE_*)")
	}
	for k, v := range map[string]string{"E2E_NODE_NAME": e.node, "E2E_NODE_IP": e.nodeIP, "E2E_NODE_REGISTRY": e.registry,
		"E2E_NODE_REGISTRY_CA": e.registryCA, "E2E_NODE_PAUSE_IMAGE": e.pause, "E2E_NODE_ARCHFILTER_IMAGE": e.image,
		"E2E_NODE_IMAGE_PLATFORMS": e.imagePlatforms} {
		if v == "" {
			t.Fatalf("%s is not set", k)
		}
	}
	if e.kubectl == "" {
		e.kubectl = "kubectl"
	}
	if e.outDir == "" {
		e.outDir = t.TempDir()
	}
	return e
}

const (
	archfilterName = "archfilter-scheduler" // the secondary profile's schedulerName and lease
	ns             = "e2e-node"
)

// The test's images: a tiny static program, once for linux/arm64 only (a
// plain manifest, as a single-platform build pushes it) and once for four
// platforms.
var (
	arm64Only = program{Pkg: "hello", Platforms: []string{"arm64"}, Plain: true}
	multiArch = program{Pkg: "hello", Platforms: []string{"amd64", "arm64", "ppc64le", "s390x"}}
	pause     = program{Pkg: "pause", Platforms: []string{"amd64"}}
	// An image that lies: its index and configs claim linux/amd64 and
	// linux/arm64, but the amd64 entry holds the arm64 binary.
	lyingHello = program{Pkg: "hello", Platforms: []string{"amd64", "arm64"}, Lies: map[string]string{"amd64": "arm64"}}
	// A tag that moves: first the pause program for both platforms, then for
	// arm64 only.
	pauseBoth  = program{Pkg: "pause", Platforms: []string{"amd64", "arm64"}}
	pauseArm64 = program{Pkg: "pause", Platforms: []string{"arm64"}, Plain: true}
)

// row is one line of the placement/outcome table.
type row struct {
	pod, image, platforms, scheduler, node, arch, outcome string
}

func TestRealNode(t *testing.T) {
	e := getenv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cs := client(t, e.kubeconfig)
	var rows []row
	defer func() { printTable(t, e, rows) }()

	node, err := cs.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := framework.Schedulable(node); !ok {
		t.Fatalf("node %s: %s", e.node, why)
	}
	t.Logf("real node %s: %s/%s, kubelet %s, %s", node.Name, node.Status.NodeInfo.OperatingSystem, node.Status.NodeInfo.Architecture,
		node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.ContainerRuntimeVersion)

	// Images: built from ./images with internal/ociimage, pushed over TLS.
	work := t.TempDir()
	refs := map[string]string{}
	for _, im := range []struct {
		p   program
		ref string
	}{
		{pause, e.pause},
		{arm64Only, e.registry + "/archfilter-e2e/hello-arm64:v1"},
		{multiArch, e.registry + "/archfilter-e2e/hello-multiarch:v1"},
	} {
		got, err := pushProgram(ctx, im.p, im.ref, e.registryCA, work)
		if err != nil {
			t.Fatal(err)
		}
		refs[im.ref] = got
		t.Logf("pushed %s (%s)", got, platformsOf(im.p))
	}
	arm64Ref := e.registry + "/archfilter-e2e/hello-arm64:v1"
	multiRef := e.registry + "/archfilter-e2e/hello-multiarch:v1"

	// archfilter, deployed as users deploy it.
	leader := deploy(ctx, t, e, cs)
	rows = append(rows, schedulerRows(ctx, t, cs, e)...)
	scrapeMetrics(ctx, t, e, cs)

	if err := framework.ResetNamespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	onRealNode := map[string]string{"kubernetes.io/hostname": e.node}
	pods := []*v1.Pod{
		// The problem: the default scheduler puts an arm64-only image on the amd64 node.
		helloPod("arm64-default", arm64Ref, "default-scheduler", onRealNode, v1.RestartPolicyAlways),
		// The same pod, scheduled by archfilter: no node it may use runs it.
		helloPod("arm64-archfilter-pinned", arm64Ref, archfilterName, onRealNode, v1.RestartPolicyAlways),
		// The same pod without the pin: archfilter picks the arm64 (KWOK) node.
		helloPod("arm64-archfilter", arm64Ref, archfilterName, nil, v1.RestartPolicyAlways),
		// A multi-arch image on the real node, run to completion.
		helloPod("multiarch-archfilter", multiRef, archfilterName, onRealNode, v1.RestartPolicyNever),
	}
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("exec format error with the default scheduler", func(t *testing.T) {
		p, msg := waitCrashLoop(ctx, t, cs, "arm64-default")
		if p.Spec.NodeName != e.node {
			t.Errorf("placed on %s, want the real node %s", p.Spec.NodeName, e.node)
		}
		if !strings.Contains(msg, "exec format error") {
			t.Errorf("container message %q, want the kernel's exec format error", msg)
		}
		rows = append(rows, row{p.Name, "hello-arm64", platformsOf(arm64Only), "default-scheduler", p.Spec.NodeName, nodeArch(ctx, cs, p.Spec.NodeName),
			fmt.Sprintf("CrashLoopBackOff (restarts %d, exit %d): %s", p.Status.ContainerStatuses[0].RestartCount,
				p.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode, msg)})
	})
	t.Run("archfilter keeps it Pending when only the amd64 node may run it", func(t *testing.T) {
		p, msg := waitFailedScheduling(ctx, t, cs, "arm64-archfilter-pinned")
		// One node: ArchFilter's reason; several: the framework's summary naming it.
		if !strings.Contains(msg, "didn't match the platforms of the pod's images") && !strings.Contains(msg, "[ArchFilter]") {
			t.Errorf("FailedScheduling %q, want ArchFilter's reason", msg)
		}
		rows = append(rows, row{p.Name, "hello-arm64", platformsOf(arm64Only), archfilterName, "-", "-", "Pending: " + msg})
	})
	t.Run("archfilter places it on the arm64 node", func(t *testing.T) {
		p := waitScheduled(ctx, t, cs, "arm64-archfilter")
		arch := nodeArch(ctx, cs, p.Spec.NodeName)
		if !strings.HasPrefix(arch, "arm64 ") {
			t.Errorf("placed on %s (%s), want an arm64 node", p.Spec.NodeName, arch)
		}
		rows = append(rows, row{p.Name, "hello-arm64", platformsOf(arm64Only), archfilterName, p.Spec.NodeName, arch,
			"Running (KWOK node: scheduled, no real container)"})
	})
	t.Run("a multi-arch image runs to completion on the real node", func(t *testing.T) {
		p := waitPhase(ctx, t, cs, "multiarch-archfilter", v1.PodSucceeded)
		if p.Spec.NodeName != e.node {
			t.Errorf("placed on %s, want the real node %s", p.Spec.NodeName, e.node)
		}
		log := podLog(ctx, t, cs, ns, p.Name, false)
		if want := "hello from linux/amd64"; log != want {
			t.Errorf("log %q, want %q", log, want)
		}
		rows = append(rows, row{p.Name, "hello-multiarch", platformsOf(multiArch), archfilterName, p.Spec.NodeName, nodeArch(ctx, cs, p.Spec.NodeName),
			fmt.Sprintf("Completed (exit %d), log %q", exitCode(p), log)})
	})
	t.Logf("lease %s/%s held by %s", "kube-system", archfilterName, leader)
}

func client(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func helloPod(name, image, scheduler string, nodeSelector map[string]string, restart v1.RestartPolicy) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{framework.LabelApp: name}},
		Spec: v1.PodSpec{
			SchedulerName:                 scheduler,
			NodeSelector:                  nodeSelector,
			RestartPolicy:                 restart,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []v1.Container{{
				Name:  "hello",
				Image: image,
				// The image's user is the nonroot 65532; no privileges needed.
				SecurityContext: &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true)},
			}},
		},
	}
}

// poll polls f every half second until it returns true, an error, or 3 minutes pass.
func poll(ctx context.Context, t *testing.T, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		ok, err := f(ctx)
		if err != nil {
			last = err
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

// getPod reads a pod of the e2e-node namespace, or of the one ctx names (ctxNS).
func getPod(ctx context.Context, cs kubernetes.Interface, name string) (*v1.Pod, error) {
	return cs.CoreV1().Pods(podNamespace(ctx)).Get(ctx, name, metav1.GetOptions{})
}

// waitCrashLoop waits until the pod's container has failed, been restarted
// and been put in back-off by kubelet (CrashLoopBackOff: its BackOff event,
// or the waiting reason, which kubelet 1.36 reports only at a later sync),
// and returns the failure's message (the container status's, else the
// previous container's log).
func waitCrashLoop(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) (*v1.Pod, string) {
	var p *v1.Pod
	poll(ctx, t, name+" in CrashLoopBackOff", func(ctx context.Context) (bool, error) {
		var err error
		if p, err = getPod(ctx, cs, name); err != nil {
			return false, err
		}
		if len(p.Status.ContainerStatuses) == 0 {
			return false, fmt.Errorf("phase %s, no container status", p.Status.Phase)
		}
		c := p.Status.ContainerStatuses[0]
		if c.RestartCount < 1 || c.LastTerminationState.Terminated == nil || c.LastTerminationState.Terminated.ExitCode == 0 {
			return false, fmt.Errorf("restarts %d, state %+v", c.RestartCount, c.State)
		}
		if c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff" {
			return true, nil
		}
		evs, err := framework.PodEvents(ctx, cs, p)
		if err != nil {
			return false, err
		}
		for _, ev := range evs {
			if ev.Reason == "BackOff" && strings.Contains(ev.Message, "restarting failed container") {
				return true, nil
			}
		}
		return false, fmt.Errorf("restarted %d times, no back-off yet", c.RestartCount)
	})
	term := p.Status.ContainerStatuses[0].LastTerminationState.Terminated
	msg := strings.TrimSpace(term.Message)
	if msg == "" {
		// The log of the container that failed: the previous one, or the
		// current one when it has failed too. Right after a restart kubelet
		// may not serve it yet.
		poll(ctx, t, name+"'s log", func(ctx context.Context) (bool, error) {
			for _, previous := range []bool{true, false} {
				b, err := cs.CoreV1().Pods(ns).GetLogs(name, &v1.PodLogOptions{Previous: previous}).DoRaw(ctx)
				if l := strings.TrimSpace(string(b)); err == nil && l != "" && !strings.HasPrefix(l, "unable to retrieve container logs") {
					msg = l
					return true, nil
				}
			}
			return false, nil
		})
	}
	t.Logf("%s: restarts %d, last exit code %d (%s), message %q", name, p.Status.ContainerStatuses[0].RestartCount, term.ExitCode, term.Reason, msg)
	return p, msg
}

func waitFailedScheduling(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) (*v1.Pod, string) {
	var p *v1.Pod
	var msg string
	poll(ctx, t, name+" FailedScheduling by "+archfilterName, func(ctx context.Context) (bool, error) {
		var err error
		if p, err = getPod(ctx, cs, name); err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("scheduled on %s", p.Spec.NodeName)
		}
		evs, err := framework.PodEvents(ctx, cs, p)
		if err != nil {
			return false, err
		}
		for _, ev := range evs {
			if ev.Reason == "FailedScheduling" && framework.EventSource(ev) == archfilterName {
				msg = ev.Message
			}
		}
		return msg != "", nil
	})
	if p.Spec.NodeName != "" || p.Status.Phase != v1.PodPending {
		t.Errorf("%s: phase %s on %q, want Pending with no node", name, p.Status.Phase, p.Spec.NodeName)
	}
	return p, msg
}

func waitScheduled(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) *v1.Pod {
	var p *v1.Pod
	poll(ctx, t, name+" scheduled", func(ctx context.Context) (bool, error) {
		var err error
		p, err = getPod(ctx, cs, name)
		return err == nil && p.Spec.NodeName != "", err
	})
	return p
}

func waitPhase(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, phase v1.PodPhase) *v1.Pod {
	var p *v1.Pod
	poll(ctx, t, fmt.Sprintf("%s %s", name, phase), func(ctx context.Context) (bool, error) {
		var err error
		if p, err = getPod(ctx, cs, name); err != nil {
			return false, err
		}
		if p.Status.Phase == v1.PodFailed && phase != v1.PodFailed {
			return false, fmt.Errorf("failed: %v", p.Status.ContainerStatuses)
		}
		return p.Status.Phase == phase, fmt.Errorf("phase %s", p.Status.Phase)
	})
	return p
}

func exitCode(p *v1.Pod) int32 {
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Terminated != nil {
			return c.State.Terminated.ExitCode
		}
	}
	return -1
}

func podLog(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespace, name string, previous bool) string {
	t.Helper()
	b, err := cs.CoreV1().Pods(namespace).GetLogs(name, &v1.PodLogOptions{Previous: previous}).DoRaw(ctx)
	if err != nil {
		t.Errorf("logs of %s/%s: %v", namespace, name, err)
	}
	return strings.TrimSpace(string(b))
}

func nodeArch(ctx context.Context, cs kubernetes.Interface, name string) string {
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "?"
	}
	arch := n.Labels[framework.LabelArch]
	if n.Annotations["kwok.x-k8s.io/node"] != "" {
		return arch + " (KWOK)"
	}
	return arch + " (real)"
}

// deploy applies manifests/overlays/secondary with kubectl apply -k, through
// an overlay of the kind its kustomization.yaml describes: the image just
// built, the scheduler configuration with the registry's CA, and what this
// cluster needs (below). It waits for the rollout and returns the leader.
func deploy(ctx context.Context, t *testing.T, e env, cs kubernetes.Interface) string {
	t.Helper()
	dir := filepath.Join(e.outDir, "overlay")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root := framework.RepoRoot()
	base, err := filepath.Rel(dir, filepath.Join(root, "manifests", "overlays", "secondary"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := framework.LoadSchedulerConfig(filepath.Join(root, "manifests", "base", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.SetArchFilterArgs(map[string]any{"registries": []any{map[string]any{"host": e.registry, "caFile": "/etc/archfilter/registry-ca.crt"}}})
	if err := cfg.Write(filepath.Join(dir, "config.yaml")); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(e.registryCA)
	if err != nil {
		t.Fatal(err)
	}
	apiserver := apiServerPort(t, e.kubeconfig)
	name, digest, _ := strings.Cut(e.image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	files := map[string]string{
		"registry-ca.crt": string(ca),
		"kustomization.yaml": fmt.Sprintf(`# Written by test/e2enode: manifests/overlays/secondary with the image just
# built and the local registry's CA.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: archfilter/archfilter-scheduler
  newName: %s
  digest: %s
configMapGenerator:
- name: archfilter-scheduler-config
  namespace: kube-system
  behavior: replace
  files:
  - config.yaml
  - registry-ca.crt
patches:
- path: real-node.yaml
`, base, name, digest),
		// Only the real node runs containers (KWOK nodes only pretend), and
		// this cluster has no kube-proxy: the kubernetes Service's ClusterIP
		// leads nowhere, so the pods reach the API server at the node's address.
		"real-node.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: archfilter-scheduler
  namespace: kube-system
spec:
  template:
    spec:
      nodeSelector:
        kubernetes.io/hostname: %s
      containers:
      - name: archfilter-scheduler
        env:
        - name: KUBERNETES_SERVICE_HOST
          value: %q
        - name: KUBERNETES_SERVICE_PORT
          value: %q
`, e.node, e.nodeIP, apiserver),
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kubectl(ctx, t, e, "apply", "-k", dir)
	if err := kubectlErr(ctx, t, e, "-n", "kube-system", "rollout", "status", "deployment/archfilter-scheduler", "--timeout=3m"); err != nil {
		_ = kubectlErr(ctx, t, e, "-n", "kube-system", "get", "pods", "-o", "wide")
		_ = kubectlErr(ctx, t, e, "-n", "kube-system", "logs", "deployment/archfilter-scheduler", "--tail=20")
		t.Fatal(err)
	}

	var holder string
	poll(ctx, t, "lease kube-system/"+archfilterName, func(ctx context.Context) (bool, error) {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, archfilterName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		holder = ptr.Deref(l.Spec.HolderIdentity, "")
		return holder != "", nil
	})
	pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=archfilter-scheduler"})
	if err != nil {
		t.Fatal(err)
	}
	leaderPod := ""
	for _, p := range pods.Items {
		if strings.HasPrefix(holder, p.Name+"_") {
			leaderPod = p.Name
		}
	}
	if leaderPod == "" {
		t.Fatalf("lease holder %q is none of the archfilter pods", holder)
	}
	t.Logf("archfilter-scheduler rolled out; lease kube-system/%s held by %s", archfilterName, holder)
	return leaderPod
}

// schedulerRows checks the scheduler's own pods: on the real node, Ready
// (startup, liveness and readiness probes over HTTPS), its configuration
// from the generated ConfigMap, and makes their table rows.
func schedulerRows(ctx context.Context, t *testing.T, cs kubernetes.Interface, e env) []row {
	t.Helper()
	pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=archfilter-scheduler"})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, archfilterName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The image is the multi-arch index make image pushed, for exactly the
	// platforms it was built for, as archfilter's own resolver reads it.
	platforms, err := resolvedPlatforms(ctx, e.image, e.registryCA)
	if err != nil {
		t.Fatalf("image %s: %v", e.image, err)
	}
	want := strings.Split(e.imagePlatforms, ",")
	slices.Sort(want)
	if diff := cmp.Diff(want, platforms); diff != "" {
		t.Errorf("image %s: platforms archfilter's resolver reads (-built,+resolved):\n%s", e.image, diff)
	}
	var rows []row
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
				ready = true
			}
		}
		if p.Spec.NodeName != e.node || !ready {
			t.Errorf("%s: node %q ready %v, want Ready on %s", p.Name, p.Spec.NodeName, ready, e.node)
		}
		cm := ""
		for _, vol := range p.Spec.Volumes {
			if vol.ConfigMap != nil {
				cm = vol.ConfigMap.Name
			}
		}
		if !strings.HasPrefix(cm, "archfilter-scheduler-config-") {
			t.Errorf("%s: config volume from ConfigMap %q, want the generated archfilter-scheduler-config-<hash>", p.Name, cm)
		}
		role := "standby"
		if strings.HasPrefix(ptr.Deref(lease.Spec.HolderIdentity, ""), p.Name+"_") {
			role = "leader"
		}
		img := p.Status.ContainerStatuses[0].ImageID
		rows = append(rows, row{p.Name, "archfilter-scheduler@" + shortDigest(img), strings.Join(platforms, ","), "default-scheduler", p.Spec.NodeName,
			nodeArch(ctx, cs, p.Spec.NodeName), fmt.Sprintf("Running, Ready (probes), %s, config %s", role, cm)})
	}
	return rows
}

func shortDigest(imageID string) string {
	if _, d, ok := strings.Cut(imageID, "@sha256:"); ok && len(d) >= 12 {
		return "sha256:" + d[:12]
	}
	return imageID
}

// scrapeMetrics scrapes every endpoint of the metrics Service once, as
// Prometheus' endpoints discovery does: the addresses from its
// EndpointSlices, a bearer token of a ServiceAccount bound to system:monitoring.
func scrapeMetrics(ctx context.Context, t *testing.T, e env, cs kubernetes.Interface) {
	t.Helper()
	const sa = "e2e-node-metrics"
	if _, err := cs.CoreV1().ServiceAccounts("kube-system").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:monitoring"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "kube-system"}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	var port int32
	poll(ctx, t, "ready endpoints of kube-system/archfilter-scheduler-metrics", func(ctx context.Context) (bool, error) {
		slices, err := cs.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=archfilter-scheduler-metrics"})
		if err != nil {
			return false, err
		}
		addrs = nil
		for _, s := range slices.Items {
			for _, p := range s.Ports {
				if ptr.Deref(p.Name, "") == "https" {
					port = ptr.Deref(p.Port, 0)
				}
			}
			for _, ep := range s.Endpoints {
				if ptr.Deref(ep.Conditions.Ready, false) {
					addrs = append(addrs, ep.Addresses...)
				}
			}
		}
		return len(addrs) > 0 && port != 0, nil
	})
	// The scheduler's serving certificate is self-signed (like kube-scheduler's).
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed serving certificate
	seen := false
	for _, a := range addrs {
		url := "https://" + net.JoinHostPort(a, fmt.Sprint(port)) + "/metrics"
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("scraping %s: %v", url, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("scraping %s: HTTP %d: %.200s", url, resp.StatusCode, body)
			continue
		}
		n := strings.Count(string(body), "\narchfilter_")
		t.Logf("scraped %s: HTTP 200, %d bytes, %d archfilter_* samples", url, len(body), n)
		if n > 0 {
			seen = true
		}
	}
	if !seen {
		t.Errorf("no endpoint of the metrics Service exposed archfilter_* metrics")
	}
}

func apiServerPort(t *testing.T, kubeconfig string) string {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(cfg.Host, "https://")
	_, port, err := net.SplitHostPort(host)
	if err != nil {
		t.Fatalf("API server address %q: %v", cfg.Host, err)
	}
	return port
}

func kubectl(ctx context.Context, t *testing.T, e env, args ...string) {
	t.Helper()
	if err := kubectlErr(ctx, t, e, args...); err != nil {
		t.Fatal(err)
	}
}

func kubectlErr(ctx context.Context, t *testing.T, e env, args ...string) error {
	t.Helper()
	cmd := exec.CommandContext(ctx, e.kubectl, append([]string{"--kubeconfig", e.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	t.Logf("kubectl %s\n%s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// printTable prints the placement/outcome table and writes it to outDir.
func printTable(t *testing.T, e env, rows []row) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tIMAGE\tIMAGE PLATFORMS\tSCHEDULER\tNODE\tNODE ARCH\tCONTAINER OUTCOME")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.pod, r.image, r.platforms, r.scheduler, r.node, r.arch, r.outcome)
	}
	tw.Flush()
	fmt.Printf("\nplacement and outcome on the real node (%s) and KWOK nodes:\n%s\n", e.node, b.String())
	if err := os.WriteFile(filepath.Join(e.outDir, "outcome.txt"), []byte(b.String()), 0o644); err != nil {
		t.Error(err)
	}
}

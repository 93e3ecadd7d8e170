package e2enode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"golang.org/x/mod/modfile"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

const (
	placementName = "archfilter-placement" // the chart's companion: Deployment, Service, webhook configuration, Lease
	placementGate = "archfilter.io/placement"
	placementNS   = "e2e-placement"
	release       = "archfilter"
)

// TestPlacementChart installs charts/archfilter with Helm on the real node:
// the chart's scheduler and the placement companion, each from the image
// make image just built, on the real kubelet. The API server calls the
// webhook through its Service (at the endpoints' pod addresses: there is no
// kube-proxy here), and the cluster's stock default-scheduler then places an
// arm64-only pod on an arm64 (KWOK) node and a multi-arch pod on the real
// amd64 node, where it runs. helm upgrade rolls the companion while pods are
// created: none stays gated. helm uninstall's hook Job, from the companion's
// image on the real node, removes the webhook and the gate of a pod still
// gated, and leaves nothing of the mode behind. Also runs the k8s1.35
// flavour's image on the real node (its --version). Before the install, a
// Deployment's arm64-only pod the default scheduler put on the real node is
// found by kubectl archfilter report --running; the companion
// (--misplaced=evict) evicts it and its replacement lands on an arm64 node.
func TestPlacementChart(t *testing.T) {
	e := getenv(t)
	helm, placementImage, k8s135Image := os.Getenv("E2E_NODE_HELM"), os.Getenv("E2E_NODE_PLACEMENT_IMAGE"), os.Getenv("E2E_NODE_K8S135_IMAGE")
	if helm == "" || placementImage == "" || k8s135Image == "" {
		t.Fatal("E2E_NODE_HELM, E2E_NODE_PLACEMENT_IMAGE and E2E_NODE_K8S135_IMAGE must be set (hack/node/e2e-node.sh)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cs := client(t, e.kubeconfig)
	var rows []row
	defer func() { printPlacementTable(t, e, rows) }()

	// TestRealNode's kustomize install goes first: the chart installs the same names.
	if overlay := filepath.Join(e.outDir, "overlay"); exists(overlay) {
		kubectl(ctx, t, e, "delete", "-k", overlay, "--ignore-not-found", "--wait")
		kubectl(ctx, t, e, "-n", "kube-system", "delete", "lease", archfilterName, "--ignore-not-found")
	}

	work := t.TempDir()
	arm64Ref, err := pushProgram(ctx, arm64Only, e.registry+"/archfilter-e2e/hello-arm64:v1", e.registryCA, work)
	if err != nil {
		t.Fatal(err)
	}
	multiRef, err := pushProgram(ctx, multiArch, e.registry+"/archfilter-e2e/hello-multiarch:v1", e.registryCA, work)
	if err != nil {
		t.Fatal(err)
	}

	// The registry's CA, mounted into both pods as users mount theirs.
	ca, err := os.ReadFile(e.registryCA)
	if err != nil {
		t.Fatal(err)
	}
	caCM := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "e2e-registry-ca", Namespace: "kube-system"}, Data: map[string]string{"ca.crt": string(ca)}}
	if _, err := cs.CoreV1().ConfigMaps("kube-system").Create(ctx, caCM, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// Before the install: a Deployment the default scheduler put on the amd64
	// node with an arm64-only image, found by kubectl archfilter report --running.
	oldPod := createMisplaced(ctx, t, cs, e, arm64Ref)
	// Beside it, two pods eviction must not touch: one whose image lies (its
	// manifest claims linux/amd64, its binary is arm64's), and one that runs
	// fine although its tag has since moved to an arm64-only image.
	lyingRef, err := pushProgram(ctx, lyingHello, e.registry+"/archfilter-e2e/hello-lying:v1", e.registryCA, work)
	if err != nil {
		t.Fatal(err)
	}
	lyingPod := createOnRealNode(ctx, t, cs, e, "lying", lyingRef, true)
	movingTag := e.registry + "/archfilter-e2e/pause-moving:v1"
	if _, err := pushProgram(ctx, pauseBoth, movingTag, e.registryCA, work); err != nil {
		t.Fatal(err)
	}
	movedPod := createOnRealNode(ctx, t, cs, e, "moved", movingTag, false)
	if _, err := pushProgram(ctx, pauseArm64, movingTag, e.registryCA, work); err != nil {
		t.Fatal(err)
	}
	out := reportRunning(ctx, t, e, oldPod, arm64Ref)
	if strings.Contains(out, movedPod.Name) {
		t.Errorf("report --running reports %s, which runs the image it started with (its tag moved since):\n%s", movedPod.Name, out)
	}
	if want := ",lying," + lyingPod.Name + ","; !strings.Contains(out, want) {
		t.Errorf("report --running does not report the pod whose image lies (%s):\n%s", lyingPod.Name, out)
	}

	// Pod Security Admission's restricted level where the chart installs:
	// the scheduler's and the companion's pods, the upgrade's and the
	// uninstall hook's Job are all admitted under it.
	enforceRestricted(ctx, t, cs, "kube-system")
	valuesFile := writeValues(t, e, work)
	helmRun(ctx, t, e, helm, "install", release, filepath.Join(framework.RepoRoot(), "charts", "archfilter"), "-n", "kube-system",
		"-f", valuesFile, "--wait", "--timeout", "4m")
	t.Cleanup(func() {
		_ = exec.Command(helm, "--kubeconfig", e.kubeconfig, "uninstall", release, "-n", "kube-system", "--no-hooks").Run()
	})

	rows = append(rows, chartPodRows(ctx, t, cs, e)...)
	webhookGates(ctx, t, cs)

	t.Run("a misplaced pod found, evicted and placed again on an arm64 node", func(t *testing.T) {
		now, events := waitHealed(ctx, t, cs, oldPod)
		// The same watch, with eviction slots to spare, evicts neither of the others.
		lies := waitEvent(ctx, t, cs, lyingPod, "not evicted (image-lies)")
		moved := waitEvent(ctx, t, cs, movedPod, "tag-moved")
		for _, p := range []*v1.Pod{lyingPod, movedPod} {
			if !stillThere(ctx, t, cs, p) || len(podEvents(ctx, t, cs, p, "ArchFilterMisplacedEvicted")) > 0 {
				t.Errorf("%s was evicted", p.Name)
			}
		}
		if evs := podEvents(ctx, t, cs, movedPod, "ArchFilterMisplaced:"); len(evs) > 0 {
			t.Errorf("%s, which runs an image with its node's platform, reported misplaced: %q", movedPod.Name, evs)
		}
		rows = append(rows,
			row{lyingPod.Name, "hello-lying", "linux/amd64 (an arm64 binary),linux/arm64", "default-scheduler (before the install)", lyingPod.Spec.NodeName,
				nodeArch(ctx, cs, lyingPod.Spec.NodeName), "exec format error; reported, not evicted: " + lies},
			row{movedPod.Name, "pause-moving", "linux/amd64,linux/arm64 (the tag now: linux/arm64)", "default-scheduler (before the install)", movedPod.Spec.NodeName,
				nodeArch(ctx, cs, movedPod.Spec.NodeName), "Running, not misplaced: " + moved})
		rows = append(rows,
			row{oldPod.Name, "hello-arm64", platformsOf(arm64Only), "default-scheduler (before the install)", oldPod.Spec.NodeName,
				nodeArch(ctx, cs, oldPod.Spec.NodeName), "exec format error; report --running: node-cannot-run, exec-format-error; evicted (" + fmt.Sprint(len(events)) + " events)"},
			row{now.Name, "hello-arm64", platformsOf(arm64Only), "default-scheduler + placement", now.Spec.NodeName,
				nodeArch(ctx, cs, now.Spec.NodeName), "the replacement, placed again " + decisionOf(t, now)})
	})

	if err := framework.ResetNamespace(ctx, cs, placementNS); err != nil {
		t.Fatal(err)
	}
	onRealNode := map[string]string{"kubernetes.io/hostname": e.node}
	for _, p := range []*v1.Pod{
		// No schedulerName: the stock default-scheduler, which knows nothing of images.
		placementPod("arm64-placement", arm64Ref, nil, v1.RestartPolicyAlways),
		placementPod("multiarch-placement", multiRef, onRealNode, v1.RestartPolicyNever),
		// What failed with the exec format error without the mode: pinned to the amd64 node.
		placementPod("arm64-placement-pinned", arm64Ref, onRealNode, v1.RestartPolicyAlways),
	} {
		created, err := cs.CoreV1().Pods(placementNS).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !hasGate(created) {
			t.Errorf("%s created without the gate %s: the API server did not reach the webhook", p.Name, placementGate)
		}
	}
	t.Run("an arm64-only pod on an arm64 node", func(t *testing.T) {
		p := waitPlaced(ctx, t, cs, "arm64-placement")
		arch := nodeArch(ctx, cs, p.Spec.NodeName)
		if !strings.HasPrefix(arch, "arm64 ") {
			t.Errorf("placed on %s (%s), want an arm64 node", p.Spec.NodeName, arch)
		}
		rows = append(rows, row{p.Name, "hello-arm64", platformsOf(arm64Only), "default-scheduler + placement", p.Spec.NodeName, arch,
			"Running (KWOK node) " + decisionOf(t, p)})
	})
	t.Run("a multi-arch pod runs on the real amd64 node", func(t *testing.T) {
		p := waitPhase(ctxNS(ctx), t, cs, "multiarch-placement", v1.PodSucceeded)
		if p.Spec.NodeName != e.node {
			t.Errorf("placed on %s, want the real node %s", p.Spec.NodeName, e.node)
		}
		log := podLog(ctx, t, cs, placementNS, p.Name, false)
		if want := "hello from linux/amd64"; log != want {
			t.Errorf("log %q, want %q", log, want)
		}
		rows = append(rows, row{p.Name, "hello-multiarch", platformsOf(multiArch), "default-scheduler + placement", p.Spec.NodeName,
			nodeArch(ctx, cs, p.Spec.NodeName), fmt.Sprintf("Completed, log %q %s", log, decisionOf(t, p))})
	})
	t.Run("an arm64-only pod pinned to the amd64 node stays Pending instead of crashing", func(t *testing.T) {
		var p *v1.Pod
		var msg string
		poll(ctx, t, "arm64-placement-pinned FailedScheduling", func(ctx context.Context) (bool, error) {
			var err error
			if p, err = cs.CoreV1().Pods(placementNS).Get(ctx, "arm64-placement-pinned", metav1.GetOptions{}); err != nil {
				return false, err
			}
			evs, err := framework.PodEvents(ctx, cs, p)
			if err != nil {
				return false, err
			}
			for _, ev := range evs {
				if ev.Reason == "FailedScheduling" {
					msg = ev.Message
				}
			}
			return msg != "" && !hasGate(p), nil
		})
		if p.Spec.NodeName != "" || !strings.Contains(msg, "node affinity") {
			t.Errorf("node %q, FailedScheduling %q: want Pending for node affinity", p.Spec.NodeName, msg)
		}
		rows = append(rows, row{p.Name, "hello-arm64", platformsOf(arm64Only), "default-scheduler + placement", "-", "-", "Pending: " + msg})
	})

	t.Run("the k8s1.35 flavour's image runs on the real node", func(t *testing.T) {
		p := placementPod("k8s135-version", k8s135Image, onRealNode, v1.RestartPolicyNever)
		p.Spec.Containers[0].Args = []string{"--version"}
		p.Annotations = map[string]string{"archfilter.io/skip": "true"}
		if _, err := cs.CoreV1().Pods(placementNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitPhase(ctxNS(ctx), t, cs, p.Name, v1.PodSucceeded)
		log := podLog(ctx, t, cs, placementNS, p.Name, false)
		if !strings.Contains(log, "Kubernetes v1.35.") {
			t.Errorf("--version printed %q, want Kubernetes v1.35.x", log)
		}
		// make image refuses a binary of another toolchain; this is what the
		// image that ran says.
		if !strings.Contains(log, ", "+goToolchain(t)+")") {
			t.Errorf("--version printed %q, want the Go toolchain go.mod names (%s)", log, goToolchain(t))
		}
		rows = append(rows, row{p.Name, "archfilter-scheduler:…-k8s1.35", "linux/amd64", "(pinned)", got.Spec.NodeName, nodeArch(ctx, cs, got.Spec.NodeName),
			"Completed, --version: " + strings.ReplaceAll(log, "\n", "; ")})
	})

	t.Run("helm upgrade rolls the companion; no pod stays gated", func(t *testing.T) {
		before := deploymentGeneration(ctx, t, cs, placementName)
		done := make(chan error, 1)
		go func() {
			// A changed value: the companion's --args and --max-gated, so its pods roll.
			done <- helmErr(ctx, t, e, helm, "upgrade", release, filepath.Join(framework.RepoRoot(), "charts", "archfilter"), "-n", "kube-system",
				"--reuse-values", "--set", "placement.maxGated=100s", "--set", "archFilterArgs.preferredPlatforms[0].platform=linux/arm64",
				"--set", "archFilterArgs.preferredPlatforms[0].weight=10", "--wait", "--timeout", "4m")
		}()
		var names []string
		for i := 0; ; i++ {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				done = nil
			case <-time.After(time.Second):
			}
			if done == nil && i >= 5 {
				break
			}
			p := placementPod(fmt.Sprintf("during-upgrade-%d", i), multiRef, nil, v1.RestartPolicyNever)
			p.Spec.NodeSelector = map[string]string{"kubernetes.io/arch": "arm64"} // a KWOK node: nothing to run
			if _, err := cs.CoreV1().Pods(placementNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			names = append(names, p.Name)
		}
		if after := deploymentGeneration(ctx, t, cs, placementName); after == before {
			t.Errorf("the companion's Deployment did not change (generation %d)", after)
		}
		// Every pod loses its gate within --max-gated (100s now, 2m before) of its creation.
		for _, n := range names {
			var p *v1.Pod
			poll(ctx, t, n+" ungated", func(ctx context.Context) (bool, error) {
				var err error
				p, err = cs.CoreV1().Pods(placementNS).Get(ctx, n, metav1.GetOptions{})
				return err == nil && !hasGate(p), err
			})
			var d struct {
				At time.Time `json:"at"`
			}
			if err := json.Unmarshal([]byte(p.Annotations["archfilter.io/decision"]), &d); err != nil {
				t.Errorf("%s: no decision recorded: %v", n, err)
				continue
			}
			if gated := d.At.Sub(p.CreationTimestamp.Time); gated > 2*time.Minute {
				t.Errorf("%s gated for %v, longer than --max-gated", n, gated)
			}
		}
		t.Logf("%d pods created during helm upgrade, every one ungated within --max-gated", len(names))
		rows = append(rows, row{fmt.Sprintf("during-upgrade-0..%d", len(names)-1), "hello-multiarch", platformsOf(multiArch), "default-scheduler + placement",
			"-", "arm64", "ungated during helm upgrade (companion rolled)"})
	})

	// A pod the companion keeps gated: its image's registry does not answer
	// and failurePolicy is Fail, so it waits for --max-gated.
	stuck := placementPod("gated-at-uninstall", e.nodeIP+":1/archfilter-e2e/unreachable:v1", nil, v1.RestartPolicyNever)
	if _, err := cs.CoreV1().Pods(placementNS).Create(ctx, stuck, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) //nolint:forbidigo // the companion retries the resolution meanwhile; the gate must still be there after
	if p, err := cs.CoreV1().Pods(placementNS).Get(ctx, stuck.Name, metav1.GetOptions{}); err != nil || !hasGate(p) {
		t.Fatalf("%s: want it still gated before the uninstall (err %v)", stuck.Name, err)
	}

	t.Run("helm uninstall refuses while a pod names the scheduler", func(t *testing.T) {
		refuseUninstall(ctx, t, cs, e, helm, stuck.Name)
		rows = append(rows, row{"names-the-scheduler", "hello-multiarch", platformsOf(multiArch), archfilterName, "-", "-",
			"Pending: helm uninstall refused by the scheduler's hook, nothing removed"})
	})

	t.Run("helm uninstall removes the webhook and every gate, then everything", func(t *testing.T) {
		start := time.Now()
		helmRun(ctx, t, e, helm, "uninstall", release, "-n", "kube-system", "--wait", "--timeout", "4m")
		t.Logf("helm uninstall (its hook on the real node) took %v", time.Since(start).Round(time.Second))
		p, err := cs.CoreV1().Pods(placementNS).Get(ctx, stuck.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if hasGate(p) {
			t.Errorf("%s still gated after helm uninstall", p.Name)
		}
		evs, _ := framework.PodEvents(ctx, cs, p)
		if !slices.ContainsFunc(evs, func(ev v1.Event) bool { return ev.Reason == "ArchFilterPlacementGateRemoved" }) {
			t.Errorf("%s: no ArchFilterPlacementGateRemoved event (the hook did not release it)", p.Name)
		}
		left := map[string]error{}
		_, left["MutatingWebhookConfiguration"] = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, placementName, metav1.GetOptions{})
		_, left["Deployment"] = cs.AppsV1().Deployments("kube-system").Get(ctx, placementName, metav1.GetOptions{})
		_, left["Lease"] = cs.CoordinationV1().Leases("kube-system").Get(ctx, placementName, metav1.GetOptions{})
		_, left["Secret (certificate)"] = cs.CoreV1().Secrets("kube-system").Get(ctx, placementName+"-tls", metav1.GetOptions{})
		_, left["hook Job"] = cs.BatchV1().Jobs("kube-system").Get(ctx, placementName+"-uninstall", metav1.GetOptions{})
		_, left["hook ClusterRole"] = cs.RbacV1().ClusterRoles().Get(ctx, placementName+"-uninstall", metav1.GetOptions{})
		_, left["scheduler Lease"] = cs.CoordinationV1().Leases("kube-system").Get(ctx, archfilterName, metav1.GetOptions{})
		_, left["scheduler hook Job"] = cs.BatchV1().Jobs("kube-system").Get(ctx, archfilterName+"-uninstall", metav1.GetOptions{})
		_, left["scheduler hook ClusterRole"] = cs.RbacV1().ClusterRoles().Get(ctx, archfilterName+"-uninstall", metav1.GetOptions{})
		for what, err := range left {
			if !apierrors.IsNotFound(err) {
				t.Errorf("%s after helm uninstall: %v, want NotFound", what, err)
			}
		}
		// The mode is off: new pods are not gated.
		after, err := cs.CoreV1().Pods(placementNS).Create(ctx, placementPod("after-uninstall", arm64Ref, nil, v1.RestartPolicyNever), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || hasGate(after) {
			t.Errorf("a pod created after the uninstall: gated %v (err %v)", after != nil && hasGate(after), err)
		}
		rows = append(rows, row{p.Name, "unreachable registry", "-", "default-scheduler + placement", p.Spec.NodeName, "-",
			fmt.Sprintf("gated (failurePolicy Fail) until helm uninstall's hook removed the gate (%v)", time.Since(start).Round(time.Second))})
	})
	_ = cs.CoreV1().ConfigMaps("kube-system").Delete(ctx, caCM.Name, metav1.DeleteOptions{})
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// refuseUninstall: while a pod names the chart's scheduler, helm uninstall
// fails in the scheduler's hook (its Job, from the scheduler's image on the
// real node, says why), before the placement mode's hook: the still gated pod
// keeps its gate and the scheduler keeps running. Then those pods (TestRealNode's
// too) are deleted, so that the uninstall can go on.
func refuseUninstall(ctx context.Context, t *testing.T, cs kubernetes.Interface, e env, helm, gated string) {
	t.Helper()
	waiting := placementPod("names-the-scheduler", e.registry+"/archfilter-e2e/hello-multiarch:v1", map[string]string{"example.com/none": "none"}, v1.RestartPolicyNever)
	waiting.Spec.SchedulerName = archfilterName
	if _, err := cs.CoreV1().Pods(placementNS).Create(ctx, waiting, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := helmErr(ctx, t, e, helm, "uninstall", release, "-n", "kube-system", "--wait", "--timeout", "4m"); err == nil {
		t.Fatal("helm uninstall succeeded while a pod names the scheduler")
	}
	pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + archfilterName + "-uninstall"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("the scheduler's hook Job has no pod (%v)", err)
	}
	logs, err := cs.CoreV1().Pods("kube-system").GetLogs(pods.Items[0].Name, &v1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"still name spec.schedulerName " + archfilterName, placementNS + "/names-the-scheduler (Pending)",
		"--set scheduler.uninstall.force=true"} {
		if !strings.Contains(string(logs), w) {
			t.Errorf("the hook's log does not say %q:\n%s", w, logs)
		}
	}
	if p, err := cs.CoreV1().Pods(placementNS).Get(ctx, gated, metav1.GetOptions{}); err != nil || !hasGate(p) {
		t.Errorf("%s: ungated by a refused uninstall (err %v): the placement mode's hook ran", gated, err)
	}
	if d, err := cs.AppsV1().Deployments("kube-system").Get(ctx, archfilterName, metav1.GetOptions{}); err != nil || ptr.Deref(d.Spec.Replicas, 1) == 0 {
		t.Errorf("the scheduler's Deployment after a refused uninstall: %v (err %v)", d, err)
	}
	if err := cs.CoreV1().Pods(placementNS).Delete(ctx, waiting.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := framework.ResetNamespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "no pod naming "+archfilterName, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.schedulerName=" + archfilterName})
		return err == nil && len(list.Items) == 0, err
	})
}

// The labels of Pod Security Admission (on by default in the API server).
const (
	psaEnforce        = "pod-security.kubernetes.io/enforce"
	psaEnforceVersion = "pod-security.kubernetes.io/enforce-version"
)

// enforceRestricted labels namespace ns pod-security.kubernetes.io/enforce=
// restricted until the test ends (the labels it had are put back), and shows
// the API server enforces it: a privileged pod is refused (server-side dry
// run), so pods admitted afterwards met the restricted level.
func enforceRestricted(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	before, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setLabels := func(ctx context.Context, enforce, version string) error {
		value := func(v string) any {
			if v == "" {
				return nil // removes the label
			}
			return v
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{psaEnforce: value(enforce), psaEnforceVersion: value(version)}}})
		_, err := cs.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	if err := setLabels(ctx, "restricted", "latest"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := setLabels(context.Background(), before.Labels[psaEnforce], before.Labels[psaEnforceVersion]); err != nil {
			t.Errorf("restoring namespace %s's labels: %v", ns, err)
		}
	})
	privileged := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "psa-probe-"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "registry.invalid/probe:v1",
			SecurityContext: &v1.SecurityContext{Privileged: ptr.To(true)}}}},
	}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, privileged, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity \"restricted") {
		t.Fatalf("a privileged pod in %s labelled %s=restricted: %v, want it refused by PodSecurity", ns, psaEnforce, err)
	}
	t.Logf("namespace %s enforces Pod Security restricted (a privileged pod is refused: %v)", ns, err)
}

// ctxNS is ctx; waitPhase and friends read the e2e-node namespace, the
// placement pods live in their own.
func ctxNS(ctx context.Context) context.Context { return context.WithValue(ctx, nsKey{}, placementNS) }

type nsKey struct{}

func podNamespace(ctx context.Context) string {
	if n, ok := ctx.Value(nsKey{}).(string); ok {
		return n
	}
	return ns
}

// writeValues writes the chart's values for this node: both images just built
// (by digest), everything on the real node (KWOK nodes run no containers),
// the API server at the node's address (no kube-proxy), the registry's CA
// mounted into both pods and named in archFilterArgs, failurePolicy Fail.
func writeValues(t *testing.T, e env, dir string) string {
	t.Helper()
	repo := func(ref string) (string, string) {
		name, digest, _ := strings.Cut(ref, "@")
		if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
			name = name[:i]
		}
		return name, digest
	}
	schedRepo, schedDigest := repo(e.image)
	placeRepo, placeDigest := repo(os.Getenv("E2E_NODE_PLACEMENT_IMAGE"))
	env := []any{
		map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": e.nodeIP},
		map[string]any{"name": "KUBERNETES_SERVICE_PORT", "value": apiServerPort(t, e.kubeconfig)},
	}
	vols := []any{map[string]any{"name": "registry-ca", "configMap": map[string]any{"name": "e2e-registry-ca"}}}
	mounts := []any{map[string]any{"name": "registry-ca", "mountPath": "/etc/archfilter-registry", "readOnly": true}}
	onNode := map[string]any{"kubernetes.io/os": "linux", "kubernetes.io/hostname": e.node}
	values := map[string]any{
		"image":             map[string]any{"repository": schedRepo, "digest": schedDigest},
		"nodeSelector":      onNode,
		"env":               env,
		"extraVolumes":      vols,
		"extraVolumeMounts": mounts,
		"archFilterArgs": map[string]any{
			"failurePolicy":      "Fail",
			"excludedNamespaces": []any{"kube-system", "kube-public", "kube-node-lease"},
			"registries":         []any{map[string]any{"host": e.registry, "caFile": "/etc/archfilter-registry/ca.crt"}},
		},
		"placement": map[string]any{
			"enabled":           true,
			"misplaced":         map[string]any{"mode": "evict"},
			"image":             map[string]any{"repository": placeRepo, "digest": placeDigest},
			"nodeSelector":      onNode,
			"env":               env,
			"extraVolumes":      vols,
			"extraVolumeMounts": mounts,
		},
	}
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.outDir, "placement-values.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func helmErr(ctx context.Context, t *testing.T, e env, helm string, args ...string) error {
	t.Helper()
	cmd := exec.CommandContext(ctx, helm, append([]string{"--kubeconfig", e.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	t.Logf("helm %s\n%s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("helm %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

func helmRun(ctx context.Context, t *testing.T, e env, helm string, args ...string) {
	t.Helper()
	if err := helmErr(ctx, t, e, helm, args...); err != nil {
		_ = kubectlErr(ctx, t, e, "-n", "kube-system", "get", "pods,jobs", "-o", "wide")
		_ = kubectlErr(ctx, t, e, "-n", "kube-system", "logs", "deployment/"+placementName, "--tail=30")
		t.Fatal(err)
	}
}

// chartPodRows checks the chart's scheduler and companion pods: Ready on the
// real node, from the images just built.
func chartPodRows(ctx context.Context, t *testing.T, cs kubernetes.Interface, e env) []row {
	t.Helper()
	var rows []row
	for _, app := range []string{archfilterName, placementName} {
		pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + app})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			n++
			ready := slices.ContainsFunc(p.Status.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.PodReady && c.Status == v1.ConditionTrue })
			if p.Spec.NodeName != e.node || !ready {
				t.Errorf("%s: node %q ready %v, want Ready on %s", p.Name, p.Spec.NodeName, ready, e.node)
			}
			img := p.Status.ContainerStatuses[0].ImageID
			rows = append(rows, row{p.Name, app + "@" + shortDigest(img), "(multi-arch)", "default-scheduler", p.Spec.NodeName,
				nodeArch(ctx, cs, p.Spec.NodeName), "Running, Ready (helm install --wait; namespace PSA restricted)"})
		}
		if n != 2 {
			t.Errorf("%d pods of %s, want the chart's 2 replicas", n, app)
		}
	}
	return rows
}

// webhookGates waits until the webhook gates pods (a server-side dry run, as
// the API server calls mutating webhooks for it): through its Service, once
// a replica holds the Lease and the webhook has seen it renewed.
func webhookGates(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	if err := framework.EnsureNamespace(ctx, cs, placementNS); err != nil {
		t.Fatal(err)
	}
	w, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, placementName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc := w.Webhooks[0].ClientConfig.Service; svc == nil || svc.Name != placementName || svc.Namespace != "kube-system" || len(w.Webhooks[0].ClientConfig.CABundle) == 0 {
		t.Fatalf("webhook client config %+v: want the Service kube-system/%s and a CA bundle", w.Webhooks[0].ClientConfig, placementName)
	}
	start := time.Now()
	poll(ctx, t, "the webhook gating a pod", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(placementNS).Create(ctx, placementPod("probe", "registry.invalid/probe:v1", nil, v1.RestartPolicyNever),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return hasGate(p), nil
	})
	t.Logf("the webhook (Service kube-system/%s) gates pods %v after the install", placementName, time.Since(start).Round(100*time.Millisecond))
}

func placementPod(name, image string, nodeSelector map[string]string, restart v1.RestartPolicy) *v1.Pod {
	p := helloPod(name, image, "", nodeSelector, restart)
	p.Namespace = placementNS
	return p
}

func hasGate(p *v1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g v1.PodSchedulingGate) bool { return g.Name == placementGate })
}

// waitPlaced waits until the companion has ungated the pod and the default
// scheduler has bound it.
func waitPlaced(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) *v1.Pod {
	var p *v1.Pod
	poll(ctx, t, name+" ungated and scheduled", func(ctx context.Context) (bool, error) {
		var err error
		p, err = cs.CoreV1().Pods(placementNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil && !hasGate(p) && p.Spec.NodeName != "", err
	})
	return p
}

// decisionOf is the companion's recorded decision, short.
func decisionOf(t *testing.T, p *v1.Pod) string {
	var d struct {
		By        string `json:"by"`
		Outcome   string `json:"outcome"`
		Platforms string `json:"platforms"`
	}
	if err := json.Unmarshal([]byte(p.Annotations["archfilter.io/decision"]), &d); err != nil {
		t.Errorf("%s: archfilter.io/decision %q: %v", p.Name, p.Annotations["archfilter.io/decision"], err)
		return "(no decision)"
	}
	if d.Outcome != "constrained" || !strings.HasPrefix(d.By, "archfilter-placement") {
		t.Errorf("%s: decision %+v, want constrained by archfilter-placement", p.Name, d)
	}
	return fmt.Sprintf("[%s: %s]", d.Outcome, d.Platforms)
}

func deploymentGeneration(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) int64 {
	d, err := cs.AppsV1().Deployments("kube-system").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Generation
}

func printPlacementTable(t *testing.T, e env, rows []row) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tIMAGE\tIMAGE PLATFORMS\tSCHEDULER\tNODE\tNODE ARCH\tOUTCOME")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.pod, r.image, r.platforms, r.scheduler, r.node, r.arch, r.outcome)
	}
	tw.Flush()
	fmt.Printf("\nthe chart (helm install, upgrade, uninstall) with the placement mode on the real node (%s):\n%s\n", e.node, b.String())
	if err := os.WriteFile(filepath.Join(e.outDir, "placement-outcome.txt"), []byte(b.String()), 0o644); err != nil {
		t.Error(err)
	}
}

// goToolchain is go.mod's toolchain line: the Go every image's binaries are
// built with.
func goToolchain(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mod.Toolchain == nil {
		t.Fatal("go.mod has no toolchain line")
	}
	return mod.Toolchain.Name
}

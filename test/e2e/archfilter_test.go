package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

// TestArchFilter* need ArchFilter's real behaviour: they fail while the
// plugin accepts every node.

// replicas puts more pods than nodes in a workload, so a scheduler that
// ignores platforms is all but certain to misplace one.
const replicas = 8

// checkPlacement fails for every bound pod of ns on a node that cannot run im.
func checkPlacement(ctx context.Context, t *testing.T, ns, selector string, im framework.Image) {
	t.Helper()
	_, pods, err := framework.Count(ctx, env.Client, ns, selector)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		n, err := env.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s on node %q: %v", p.Name, p.Spec.NodeName, err)
		}
		if !im.RunsOn(n) {
			t.Errorf("pod %s (image %s: %s) landed on %s (%s)", p.Name, im.Name,
				strings.Join(im.PlatformStrings(), ","), n.Name, framework.NodePlatform(n))
		}
	}
}

// TestArchFilterPlacement: every pod of a single-platform (or restricted)
// image lands on a node of a platform the image has; amd64-only never lands
// on arm64, the Windows image only on the Windows node, and so on.
func TestArchFilterPlacement(t *testing.T) {
	for _, im := range []framework.Image{
		framework.ImageAMD64Only, framework.ImageARM64Only, framework.ImageS390XOnly,
		framework.ImageWindows, framework.ImageMultiArch, framework.ImagePrivate,
	} {
		t.Run(dnsName(im.Name), func(t *testing.T) {
			ctx, ns := setup(t)
			g := launch(ctx, t, 1, false)
			apply(ctx, t, ns, framework.Workload{Name: "app", Image: im, Replicas: replicas, SchedulerName: g.SchedulerName()})
			if _, err := framework.WaitScheduled(ctx, env.Client, ns, "", replicas, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			checkPlacement(ctx, t, ns, "", im)
		})
	}
}

// TestArchFilterUnschedulable: an image only for linux/riscv64 fits no node:
// the pod stays unbound, FailedScheduling counts the nodes, and an event says
// what keeps it off each node platform.
func TestArchFilterUnschedulable(t *testing.T) {
	ctx, ns := setup(t)
	g := launch(ctx, t, 1, false)
	p := pod(ns, "riscv64", framework.ImageRISCV64Only.Ref(env.Public, env.Private), g.SchedulerName())
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// maxWait is 30s in the manifests: within it the pod is resolved and found
	// to fit nowhere.
	var got *v1.Pod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		got, _ = env.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		return got != nil && framework.StateOf(got) != framework.PodPending, nil
	})
	if err != nil {
		t.Fatalf("pod neither scheduled nor marked unschedulable: %v", err)
	}
	if got.Spec.NodeName != "" {
		t.Fatalf("riscv64-only pod was bound to %s", got.Spec.NodeName)
	}
	evs, err := framework.PodEvents(ctx, env.Client, got)
	if err != nil {
		t.Fatal(err)
	}
	msg := framework.LastFailedScheduling(evs)
	if msg == "" {
		t.Fatalf("no FailedScheduling event")
	}
	t.Logf("FailedScheduling: %s", msg)
	if !strings.Contains(msg, "0/") {
		t.Errorf("FailedScheduling message %q does not count the nodes", msg)
	}
	// ArchFilter's nodes are one clause, as upstream's plugins' are; what keeps
	// the pod off each node platform is its ImagePlatformsResolved event.
	const clause = "node(s) didn't match the platforms of the pod's images (linux/riscv64)"
	if n := strings.Count(msg, clause); n != 1 || strings.Contains(msg, "does not run on") {
		t.Errorf("FailedScheduling message %q: want ArchFilter's nodes counted in one clause %q, without the detail per node platform", msg, clause)
	}
	var detail string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := framework.PodEvents(ctx, env.Client, got)
		if err != nil {
			return false, err
		}
		for _, e := range evs {
			if e.Reason == "ImagePlatformsResolved" && strings.Contains(e.Message, "on the cluster's other nodes: ") && strings.Contains(e.Message, "does not run on") {
				detail = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no ImagePlatformsResolved event saying what keeps the pod off each node platform: %v", err)
	}
	t.Logf("ImagePlatformsResolved: %s", detail)
}

// TestArchFilterPlatformsAnnotation: archfilter.io/platforms declares the
// platforms, with no registry lookup (the image does not exist).
func TestArchFilterPlatformsAnnotation(t *testing.T) {
	ctx, ns := setup(t)
	g := launch(ctx, t, 1, false)
	ghost := framework.Image{Name: "demo/does-not-exist", Tag: "v1", Platforms: framework.ImageS390XOnly.Platforms}
	apply(ctx, t, ns, framework.Workload{Name: "declared", Image: ghost, Replicas: replicas, SchedulerName: g.SchedulerName(),
		Annotations: map[string]string{"archfilter.io/platforms": "linux/s390x"}})
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, "", replicas, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	checkPlacement(ctx, t, ns, "", ghost)
}

// TestArchFilterSkipAnnotation: archfilter.io/skip lets a pod through
// unfiltered, even one whose image fits no node.
func TestArchFilterSkipAnnotation(t *testing.T) {
	ctx, ns := setup(t)
	g := launch(ctx, t, 1, false)
	apply(ctx, t, ns, framework.Workload{Name: "skipped", Image: framework.ImageRISCV64Only, Replicas: 2, SchedulerName: g.SchedulerName(),
		Annotations: map[string]string{"archfilter.io/skip": "true"}})
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, "", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// TestArchFilterDefaultScheduler: with the replacement profile, pods that
// name no scheduler are filtered too.
func TestArchFilterDefaultScheduler(t *testing.T) {
	ctx, ns := setup(t)
	if !env.DefaultSchedulerIsArchFilter {
		t.Skipf("the %s provider's default scheduler is not archfilter", env.Provider)
	}
	apply(ctx, t, ns, framework.Workload{Name: "amd64", Image: framework.ImageAMD64Only, Replicas: replicas})
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, "", replicas, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	checkPlacement(ctx, t, ns, "", framework.ImageAMD64Only)
}

// TestArchFilterRegistryRestart: with failurePolicy Fail, pods created while
// the registries are down are held, not lost and not placed blindly; once the
// registries are back every pod lands on a node that runs its image.
// (Under the manifests' Ignore policy such pods are released unconstrained:
// that is fail-open by design, so the test asks for Fail.)
func TestArchFilterRegistryRestart(t *testing.T) {
	ctx, ns := setup(t)
	if env.Registries == nil {
		t.Skipf("the %s provider cannot restart its registries", env.Provider)
	}
	g := launchWith(ctx, t, framework.LaunchOptions{Replicas: 1, ArchFilterArgs: map[string]any{
		"failurePolicy": "Fail",
		"cache":         map[string]any{"negativeTTL": "2s"},
	}})
	// A fresh image: no scheduler has an answer for it cached.
	im := framework.Image{Name: "demo/" + ns, Tag: "v1", Index: true, Platforms: framework.ImageS390XOnly.Platforms}
	if _, err := framework.Push(ctx, env.Public, im); err != nil {
		t.Fatal(err)
	}
	if err := env.Registries.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = env.Registries.Start(context.Background())
		}
	})
	apply(ctx, t, ns, framework.Workload{Name: "during", Image: im, Replicas: 4, SchedulerName: g.SchedulerName()})
	// The outage lasts until the scheduler has met the pods: each has been
	// marked unschedulable or has an event from the plugin.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, pods, err := framework.Count(ctx, env.Client, ns, framework.LabelApp+"=during")
		if err != nil || c.Total < 4 {
			return false, nil
		}
		for i := range pods {
			if framework.StateOf(&pods[i]) == framework.PodUnschedulable {
				continue
			}
			evs, err := framework.PodEvents(ctx, env.Client, &pods[i])
			if err != nil || len(framework.ArchFilterNotes(&pods[i], evs)) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the scheduler did not meet the pods during the outage: %v", err)
	}
	checkPlacement(ctx, t, ns, framework.LabelApp+"=during", im) // bound ones, if any, must fit
	if err := env.Registries.Start(ctx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	apply(ctx, t, ns, framework.Workload{Name: "after", Image: im, Replicas: 4, SchedulerName: g.SchedulerName()})
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, "", 8, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	checkPlacement(ctx, t, ns, "", im)
}

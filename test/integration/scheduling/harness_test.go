package scheduling

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	testutils "k8s.io/kubernetes/test/integration/util"

	_ "github.com/archfilter/archfilter/apis/config/scheme"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

const schedulerName = "archfilter-scheduler"

// cluster is an apiserver with the scheduler running one archfilter profile.
type cluster struct {
	t   *testing.T
	ctx context.Context
	cs  clientset.Interface
	ns  string
	// config reaches the apiserver as an administrator.
	config *rest.Config
}

// startCluster starts an apiserver and a scheduler whose profile is the
// manifests' secondary profile with args (YAML, indented under "args:").
func startCluster(t *testing.T, args string, extraPlugins string) *cluster {
	t.Helper()
	return startClusterWith(t, args, extraPlugins, nil)
}

// startClusterWith is startCluster with setup run between the apiserver's start
// and the scheduler's: the scheduler's caches then start with what setup
// created, so its first decisions (and their messages, which count nodes) do
// not depend on how fast its informers saw the nodes.
func startClusterWith(t *testing.T, args, extraPlugins string, setup func(ctx context.Context, cs clientset.Interface)) *cluster {
	t.Helper()
	testCtx := testutils.InitTestAPIServer(t, "archfilter", nil)
	if setup != nil {
		setup(testCtx.Ctx, testCtx.ClientSet)
	}
	cfg := loadConfig(t, args, extraPlugins)
	registry := frameworkruntime.Registry{
		archfilter.Name:                archfilter.New,
		archfilter.TaintTolerationName: archfilter.NewTaintToleration,
	}
	testCtx = testutils.InitTestSchedulerWithOptions(t, testCtx, 0,
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithFrameworkOutOfTreeRegistry(registry),
		scheduler.WithPodInitialBackoffSeconds(0),
		scheduler.WithPodMaxBackoffSeconds(1),
	)
	testutils.SyncSchedulerInformerFactory(testCtx)
	go testCtx.Scheduler.Run(testCtx.SchedulerCtx)
	t.Cleanup(testCtx.SchedulerCloseFn)
	return &cluster{t: t, ctx: testCtx.Ctx, cs: testCtx.ClientSet, ns: testCtx.NS.Name, config: testCtx.KubeConfig}
}

// loadConfig decodes a KubeSchedulerConfiguration the way kube-scheduler does.
func loadConfig(t *testing.T, args, extraPlugins string) *schedconfig.KubeSchedulerConfiguration {
	t.Helper()
	yaml := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: %s
  plugins:
    multiPoint:
      enabled:
      - name: ArchFilter
%s
  pluginConfig:
  - name: ArchFilter
    args:
%s
`, schedulerName, extraPlugins, indent(args, "      "))
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	logger, _ := ktesting.NewTestContext(t)
	cfg, err := options.LoadConfigFromFile(logger, path)
	if err != nil {
		t.Fatalf("config:\n%s\n%v", yaml, err)
	}
	return cfg
}

func indent(s, prefix string) string {
	if strings.TrimSpace(s) == "" {
		return prefix + "{}"
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// node creates a ready node of os/arch (and Windows build) with room for pods.
func (c *cluster) node(name, osName, arch, windowsBuild string, taints ...v1.Taint) *v1.Node {
	c.t.Helper()
	labels := map[string]string{v1.LabelOSStable: osName, v1.LabelArchStable: arch, v1.LabelHostname: name}
	if windowsBuild != "" {
		labels[v1.LabelWindowsBuild] = windowsBuild
	}
	n := st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{
		v1.ResourcePods: "32", v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi",
	}).Obj()
	n.Labels = labels
	n.Spec.Taints = taints
	created, err := c.cs.CoreV1().Nodes().Create(c.ctx, n, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("creating node %s: %v", name, err)
	}
	return created
}

// pod creates a pod for the archfilter scheduler with one container per image.
func (c *cluster) pod(name string, images []string, mutate ...func(*v1.Pod)) *v1.Pod {
	c.t.Helper()
	p := st.MakePod().Namespace(c.ns).Name(name).SchedulerName(schedulerName).Obj()
	for i, img := range images {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Image: img})
	}
	for _, m := range mutate {
		m(p)
	}
	created, err := c.cs.CoreV1().Pods(c.ns).Create(c.ctx, p, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("creating pod %s: %v", name, err)
	}
	return created
}

// scheduledNode waits until the pod is bound and returns its node.
func (c *cluster) scheduledNode(name string) string {
	c.t.Helper()
	var node string
	err := wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.cs.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		c.t.Fatalf("pod %s was not scheduled: %v%s", name, err, c.describe(name))
	}
	return node
}

// noNodesYet is kube-scheduler's message for a cycle that found no node in its cache
// (schedule_one.go's ErrNoNodesAvailable).
const noNodesYet = "no nodes available to schedule pods"

// unschedulableMessage waits until the scheduler reports the pod unschedulable
// and returns the PodScheduled condition's message, once the scheduler has seen
// the nodes.

func (c *cluster) unschedulableMessage(name string) string {
	c.t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.cs.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s was scheduled to %s", name, p.Spec.NodeName)
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse && cond.Reason == v1.PodReasonUnschedulable {
				if cond.Message == noNodesYet || c.triedBeforeEveryNode(ctx, cond.Message) {
					// Tried before the scheduler's cache held the test's nodes (a
					// busy machine); the nodes' arrival brings the pod back.
					return false, nil
				}
				msg = cond.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Fatalf("pod %s was not reported unschedulable: %v%s", name, err, c.describe(name))
	}
	return msg
}

// eventually polls cond for up to a minute.
func (c *cluster) eventually(what string, cond func(context.Context) (bool, error)) {
	c.t.Helper()
	if err := wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, time.Minute, true, cond); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
}

// eventMessages returns the messages of events with reason on pod name.
func (c *cluster) eventMessages(name, reason string) []string {
	list, err := c.cs.EventsV1().Events(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// describe summarises a pod and its events for failure messages.
func (c *cluster) describe(name string) string {
	p, err := c.cs.CoreV1().Pods(c.ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\npod %s: node=%q conditions=%+v", name, p.Spec.NodeName, p.Status.Conditions)
	list, _ := c.cs.EventsV1().Events(c.ns).List(c.ctx, metav1.ListOptions{})
	if list != nil {
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				fmt.Fprintf(&b, "\n  event %s: %s", e.Reason, e.Note)
			}
		}
	}
	return b.String()
}

// triedBeforeEveryNode reports whether a scheduling failure message ("0/N nodes
// are available: ...") counted fewer nodes than the API server holds: the cycle
// ran while the scheduler's cache still lacked some of the test's nodes.
func (c *cluster) triedBeforeEveryNode(ctx context.Context, msg string) bool {
	var seen int
	if _, err := fmt.Sscanf(msg, "0/%d nodes are available", &seen); err != nil {
		return false
	}
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	return err == nil && seen < len(nodes.Items)
}

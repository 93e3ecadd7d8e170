package cycle

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"
)

// preemptCases are upstream PreemptionBasic's high-priority pods over its cluster of
// low-priority ones, scheduled by the default profile and by ArchFilter's: a cycle
// whose Filter rejects every node (no node has the CPU), followed by PostFilter,
// where DefaultPreemption dry-runs the removal of victims on candidate nodes (it
// clones the cycle state and calls each plugin's AddPod/RemovePod extensions for
// every victim, and the Filter plugins again). BenchmarkSchedulingCycle runs them
// over preemptLayout(benchNodes): what ArchFilter adds to preemption.
var preemptCases = []cycleCase{
	{name: "preempt/default", profile: profileDefault, img: imageEverywhere, preempt: true},
	{name: "preempt/archfilter", profile: profileArchFilter, img: imageEverywhere, preempt: true},
}

// preemptLayout is upstream PreemptionBasic's cluster at n nodes: node-default nodes
// (no kubernetes.io/arch or os label), each full with four pod-low-priority pods
// (initPods = 4 × initNodes).
func preemptLayout(n int) layout {
	return layout{nodes: n, makeNode: makeUpstreamNode, podsPerNode: 4, boundPodOf: lowPriorityPod}
}

// lowPriorityPod is upstream's pod-low-priority.yaml (900m CPU, 500Mi, priority 0,
// terminationGracePeriodSeconds 0), already running on node.
func lowPriorityPod(name, node string) *v1.Pod {
	pod := boundPod(name, node)
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("900m"), v1.ResourceMemory: resource.MustParse("500Mi")}
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: res, Limits: res}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	return pod
}

// highPriority gives pod upstream's pod-high-priority.yaml: priority 10, 3 CPUs and
// 500Mi, more than any node of preemptLayout has free.
func highPriority(pod *v1.Pod) {
	pod.Spec.Priority = ptr.To[int32](10)
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("500Mi")}
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: res, Limits: res}
}

// createPods adds the pods to the API server's fake and waits until the informer's
// lister has them: DefaultPreemption reads the preemptor from the lister.
func (c *cluster) createPods(tb testing.TB, ctx context.Context, pods []queuedPod) {
	tb.Helper()
	for _, q := range pods {
		if _, err := c.client.CoreV1().Pods(podOf(q).Namespace).Create(ctx, podOf(q), metav1.CreateOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	last := podOf(pods[len(pods)-1])
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := c.pods.Pods(last.Namespace).Get(last.Name)
		return err == nil, nil
	})
	if err != nil {
		tb.Fatalf("the pod lister does not have %s: %v", last.Name, err)
	}
}

// preemptCycle is one scheduling cycle of a pod that fits no node: SchedulePod's
// FitError, then the PostFilter plugins (DefaultPreemption). It returns the node
// nominated for the pod. The victims' deletions are dropped by the fake API server
// (newClusterOf), so the next cycle finds the same cluster.
func (c *cluster) preemptCycle(tb testing.TB, ctx context.Context, fw framework.Framework, state fwk.CycleState, q queuedPod) string {
	res, err := c.sched.SchedulePod(ctx, fw, state, q)
	var fitErr *framework.FitError
	if !errors.As(err, &fitErr) {
		tb.Fatalf("want every node to reject %s, got host %q and error %v", podOf(q).Name, res.SuggestedHost, err)
	}
	result, s := fw.RunPostFilterPlugins(ctx, state, podOf(q), fitErr.Diagnosis.NodeToStatus)
	if !s.IsSuccess() || result == nil || result.NominatingInfo == nil || result.NominatedNodeName == "" {
		tb.Fatalf("preemption for %s: status %v, result %+v", podOf(q).Name, s, result)
	}
	return result.NominatedNodeName
}

// TestSchedulingCyclePreempt runs a preemption cycle of each case over a small
// cluster of upstream's layout: the pod fits no node, a node is nominated, and the
// victims stay (the next cycle finds them again).
func TestSchedulingCyclePreempt(t *testing.T) {
	ctx := context.Background()
	c := newClusterOf(t, ctx, preemptLayout(30))
	if got, err := c.sched.Cache.PodCount(); err != nil || got != 120 {
		t.Fatalf("the cache holds %d pods (%v), want 120", got, err)
	}
	for _, tc := range preemptCases {
		t.Run(tc.name, func(t *testing.T) {
			pods := c.queuedPods(t, tc, 2)
			if p := podOf(pods[0]); p.Spec.Priority == nil || *p.Spec.Priority != 10 {
				t.Fatalf("queuedPods made %s without upstream's priority", p.Name)
			}
			c.createPods(t, ctx, pods)
			for i, q := range pods {
				host := c.preemptCycle(t, ctx, c.sched.Profiles[tc.profile], framework.NewCycleState(), q)
				c.checkPlacements(t, tc, []string{host})
				if i == 0 {
					// Wait for the first cycle's asynchronous preemption to have been tried.
					time.Sleep(100 * time.Millisecond)
				}
			}
			if got, _ := c.sched.Cache.PodCount(); got != 120 {
				t.Errorf("after preemption the cache holds %d pods, want the 120 of the layout", got)
			}
		})
	}
}

// makeUpstreamNode is upstream's node-default.yaml: 4 CPUs, 32Gi, 110 pods, Ready,
// no labels.
func makeUpstreamNode(i int) *v1.Node {
	node := st.MakeNode().Name(fmt.Sprintf("node-%05d", i)).
		Capacity(map[v1.ResourceName]string{v1.ResourcePods: "110", v1.ResourceCPU: "4", v1.ResourceMemory: "32Gi"}).Obj()
	node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	node.Status.Phase = v1.NodeRunning
	return node
}

// Package karpenter is the proof of the placement mode with a real
// autoscaler: Karpenter's KWOK provider (sigs.k8s.io/karpenter/kwok, built
// unmodified by hack/karpenter/tools.sh) runs against a local control plane
// that starts with no nodes, a NodePool offering amd64 and arm64 capacity, and
// the stock kube-scheduler profile. An arm64-only Deployment that says nothing
// about platforms is run twice: with the placement mode off (what Karpenter
// creates and where the replicas land is recorded) and on (Karpenter must
// create arm64 capacity and every replica must bind there).
//
// Run it with `make e2e-karpenter` (hack/karpenter/e2e.sh).
package karpenter

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/test/e2e/framework"
)

const (
	replicas = 3
	app      = "arm64-only"
	// provisionTimeout bounds how long Karpenter may take to create capacity
	// and the scheduler to bind every replica to it (≈20 s measured).
	provisionTimeout = 2 * time.Minute
)

// outcome is what one scenario ended with.
type outcome struct {
	scenario string
	// nodes are the nodes Karpenter created, "instance-type (os/arch)".
	nodes   []string
	bound   int // replicas bound to a node
	onARM64 int // ... to a linux/arm64 node, where the image runs
	rows    []framework.Row
	pods    []v1.Pod
	took    time.Duration // until every replica was bound, or the timeout
}

func (o outcome) verdict() string {
	switch {
	case o.bound == replicas && o.onARM64 == replicas:
		return "ok: every replica on arm64"
	case o.bound == 0 && len(o.nodes) == 0:
		return "nothing: no node, no replica bound"
	case o.bound > o.onARM64:
		return fmt.Sprintf("WRONG: %d replica(s) on nodes that cannot run the image", o.bound-o.onARM64)
	default:
		return fmt.Sprintf("%d of %d replicas bound", o.bound, replicas)
	}
}

func TestKarpenter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	c := newCluster(t)
	if _, err := framework.Push(ctx, c.registry, framework.ImageARM64Only); err != nil {
		t.Fatalf("seeding the registry: %v", err)
	}
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) > 0 {
		t.Fatalf("the cluster must start without nodes, it has %d (hack/cluster/up.sh with FAKE_NODES=0)", len(nodes.Items))
	}
	karpenter := c.installKarpenter(ctx, t)

	var outcomes []outcome
	t.Run("placement mode off", func(t *testing.T) {
		o := c.scenario(ctx, t, "karpenter-mode-off", karpenter)
		outcomes = append(outcomes, o)
		// Recorded, not judged: what Karpenter does without the mode. It
		// only has to show the problem, or the comparison proves nothing.
		if o.onARM64 == replicas {
			t.Errorf("with the placement mode off every replica still landed on arm64 (nodes %v): the NodePool's cheapest offering must be amd64 (testdata/instance-types.json) for the comparison to mean anything", o.nodes)
		}
	})
	t.Run("placement mode on", func(t *testing.T) {
		placement := startPlacement(ctx, t, c)
		o := c.scenario(ctx, t, "karpenter-mode-on", karpenter)
		outcomes = append(outcomes, o)
		if o.bound != replicas || o.onARM64 != replicas {
			t.Errorf("want all %d replicas bound to linux/arm64 nodes, got %d bound, %d on arm64 (%s)\nKarpenter's log: %s\nplacement's log: %s",
				replicas, o.bound, o.onARM64, o.verdict(), karpenter.Tail(20), placement.Tail(20))
		}
		for _, n := range o.nodes {
			if !strings.HasSuffix(n, "(linux/arm64)") {
				t.Errorf("Karpenter created %s: with the mode on it should only create arm64 capacity", n)
			}
		}
		// The Deployment says nothing about platforms: what the pods
		// require is what the mode wrote, and no gate is left behind.
		for _, p := range o.pods {
			if len(p.Spec.SchedulingGates) > 0 {
				t.Errorf("pod %s still has scheduling gates %v", p.Name, p.Spec.SchedulingGates)
			}
			if got := sets.List(podplatform.OwnConstraintOf(&p).Arch); !slices.Equal(got, []string{"arm64"}) {
				t.Errorf("pod %s requires kubernetes.io/arch %v, want [arm64] written by the placement mode", p.Name, got)
			}
		}
	})
	// After the mode-on scenario its companion is stopped, its webhook
	// configuration left behind.
	t.Run("uninstall leaves no gated pod", func(t *testing.T) { uninstallPlacement(ctx, t, c) })
	fmt.Println("\nKarpenter (KWOK provider), NodePool offering linux/amd64 and linux/arm64, no nodes at start;")
	fmt.Printf("Deployment of %d replicas of an arm64-only image, no nodeSelector or affinity:\n\n", replicas)
	printOutcomes(os.Stdout, outcomes)
}

// scenario runs the Deployment in ns, waits for it to be placed, records
// the outcome and prints its placement table, then removes the Deployment
// and the capacity Karpenter created.
func (c *cluster) scenario(ctx context.Context, t *testing.T, ns string, karpenter *framework.Process) outcome {
	t.Helper()
	if err := framework.ResetNamespace(ctx, c.cs, ns); err != nil {
		t.Fatal(err)
	}
	w := framework.Workload{Name: app, Image: framework.ImageARM64Only, Replicas: replicas}
	start := time.Now()
	if err := framework.ApplyDeployment(ctx, c.cs, w.Deployment(ns, c.registry, c.registry)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		// The pods go first: a node drained under a live ReplicaSet gets
		// its pods recreated, and Karpenter new capacity for them.
		if err := framework.ResetNamespace(ctx, c.cs, ns); err != nil {
			t.Errorf("emptying namespace %s: %v", ns, err)
		}
		if err := c.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
		if err := c.removeCapacity(ctx); err != nil {
			t.Errorf("removing Karpenter's capacity after %s: %v", ns, err)
		}
	})
	_, waitErr := framework.WaitScheduled(ctx, c.cs, ns, framework.LabelApp+"="+app, replicas, provisionTimeout)
	if karpenter.Exited() {
		t.Fatalf("Karpenter exited: %s", karpenter.Tail(30))
	}
	o := outcome{scenario: strings.TrimPrefix(ns, "karpenter-"), took: time.Since(start)}
	var err error
	if o.nodes, err = c.createdNodes(ctx); err != nil {
		t.Fatal(err)
	}
	if _, o.pods, err = framework.Count(ctx, c.cs, ns, framework.LabelApp+"="+app); err != nil {
		t.Fatal(err)
	}
	if o.rows, err = framework.Placement(ctx, c.cs, ns, map[string]framework.Image{app: framework.ImageARM64Only}); err != nil {
		t.Fatal(err)
	}
	for _, r := range o.rows {
		if r.Node != "-" {
			o.bound++
		}
		if r.NodePlatform == "linux/arm64" {
			o.onARM64++
		}
	}
	note := ""
	if waitErr != nil {
		note = " (not every replica bound: " + waitErr.Error() + ")"
	}
	fmt.Printf("\n--- %s: %s after %s%s\n", ns, o.verdict(), o.took.Round(time.Second), note)
	framework.PrintTable(os.Stdout, o.rows)
	return o
}

// createdNodes describes the nodes Karpenter created (every node: the
// cluster started with none), checking each has its NodeClaim.
func (c *cluster) createdNodes(ctx context.Context) ([]string, error) {
	// A node and its NodeClaim share the provider ID, which the claim has
	// from launch on; lists may lag each other for a moment, hence the poll.
	var nodes []v1.Node
	var orphan string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		claims, err := c.nodeClaims(ctx)
		if err != nil {
			return false, nil
		}
		l, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		claimed := map[string]bool{}
		for _, cl := range claims {
			id, _, _ := unstructured.NestedString(cl.Object, "status", "providerID")
			claimed[id] = true
		}
		nodes, orphan = l.Items, ""
		for _, n := range nodes {
			if !claimed[n.Spec.ProviderID] {
				orphan = n.Name
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("node %s has no NodeClaim with its provider ID: not created by Karpenter: %w", orphan, err)
	}
	var out []string
	for _, n := range nodes {
		out = append(out, fmt.Sprintf("%s (%s)", n.Labels[v1.LabelInstanceTypeStable], framework.NodePlatform(&n)))
	}
	sort.Strings(out)
	return out, nil
}

// printOutcomes writes one line per scenario.
func printOutcomes(w io.Writer, outcomes []outcome) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PLACEMENT MODE\tNODES KARPENTER CREATED\tREPLICAS BOUND\tON LINUX/ARM64\tOUTCOME")
	for _, o := range outcomes {
		nodes := strings.Join(o.nodes, ", ")
		if nodes == "" {
			nodes = "none"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d/%d\t%s\n", strings.TrimPrefix(o.scenario, "mode-"), nodes, o.bound, replicas, o.onARM64, replicas, o.verdict())
	}
	tw.Flush()
}

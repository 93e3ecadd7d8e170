package framework

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/archfilter/archfilter/pkg/platform"
)

// Labels nodes carry (kubelet sets them on real nodes).
const (
	LabelOS           = "kubernetes.io/os"
	LabelArch         = "kubernetes.io/arch"
	LabelWindowsBuild = "node.kubernetes.io/windows-build"
	// LabelFakeNode marks nodes this package created, so they can be listed and deleted.
	LabelFakeNode = "archfilter.io/e2e-node"
	// kwokAnnotation hands a Node object to the kwok controller, which then
	// keeps it Ready and runs its pods (kwokctl's default selector).
	kwokAnnotation = "kwok.x-k8s.io/node"
)

// NodeSpec is one fake node.
type NodeSpec struct {
	Name         string
	OS           string
	Arch         string
	WindowsBuild string // node.kubernetes.io/windows-build, Windows only
}

// Platform returns "os/arch".
func (n NodeSpec) Platform() string { return n.OS + "/" + n.Arch }

// DefaultNodes are the demo's and the suite's nodes: one per platform.
var DefaultNodes = []NodeSpec{
	{Name: "node-linux-amd64", OS: "linux", Arch: "amd64"},
	{Name: "node-linux-arm64", OS: "linux", Arch: "arm64"},
	{Name: "node-linux-ppc64le", OS: "linux", Arch: "ppc64le"},
	{Name: "node-linux-s390x", OS: "linux", Arch: "s390x"},
	{Name: "node-windows-amd64", OS: "windows", Arch: "amd64", WindowsBuild: "10.0.17763"},
}

// FakeNode builds a Node object the kwok controller manages: roomy
// allocatable, the platform labels a kubelet would set, and nodeInfo to match.
func FakeNode(spec NodeSpec) *v1.Node {
	labels := map[string]string{
		"kubernetes.io/hostname":  spec.Name,
		LabelOS:                   spec.OS,
		LabelArch:                 spec.Arch,
		"beta.kubernetes.io/os":   spec.OS,
		"beta.kubernetes.io/arch": spec.Arch,
		"type":                    "kwok",
		LabelFakeNode:             "true",
	}
	if spec.WindowsBuild != "" {
		labels[LabelWindowsBuild] = spec.WindowsBuild
	}
	capacity := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("32"),
		v1.ResourceMemory: resource.MustParse("256Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        spec.Name,
			Labels:      labels,
			Annotations: map[string]string{kwokAnnotation: "fake"},
		},
		Status: v1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			NodeInfo: v1.NodeSystemInfo{
				OperatingSystem: spec.OS,
				Architecture:    spec.Arch,
				KubeletVersion:  "fake",
			},
		},
	}
}

// EnsureNodes creates the nodes that are missing and fixes the platform labels
// of those that exist; it does not wait (see WaitNodesSchedulable).
func EnsureNodes(ctx context.Context, cs kubernetes.Interface, specs []NodeSpec) error {
	for _, spec := range specs {
		want := FakeNode(spec)
		got, err := cs.CoreV1().Nodes().Get(ctx, spec.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if _, err := cs.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating node %s: %w", spec.Name, err)
			}
		case err != nil:
			return fmt.Errorf("getting node %s: %w", spec.Name, err)
		default:
			changed := false
			for k, v := range want.Labels {
				if got.Labels[k] != v {
					if got.Labels == nil {
						got.Labels = map[string]string{}
					}
					got.Labels[k] = v
					changed = true
				}
			}
			if changed {
				if _, err := cs.CoreV1().Nodes().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
					return fmt.Errorf("updating node %s: %w", spec.Name, err)
				}
			}
		}
	}
	return nil
}

// Schedulable reports whether a node is Ready and free of the node lifecycle
// taints (a fresh Node is tainted not-ready until its Ready condition is seen).
func Schedulable(n *v1.Node) (bool, string) {
	if n.Spec.Unschedulable {
		return false, "cordoned"
	}
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return false, "not Ready yet"
	}
	for _, t := range n.Spec.Taints {
		if strings.HasPrefix(t.Key, "node.kubernetes.io/") && t.Effect != v1.TaintEffectPreferNoSchedule {
			return false, "tainted " + t.Key
		}
	}
	return true, ""
}

// WaitNodesSchedulable polls until every named node is Schedulable.
func WaitNodesSchedulable(ctx context.Context, cs kubernetes.Interface, names []string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if ok, why := Schedulable(n); !ok {
				last = name + ": " + why
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("nodes not schedulable after %s (%s): %w", timeout, last, err)
	}
	return nil
}

// NodeNames returns the names of specs.
func NodeNames(specs []NodeSpec) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

// NodePlatform returns a node's platform as kubectl archfilter why prints it:
// pkg/platform's "os/arch", with a Windows node's build after it
// ("windows/amd64 (build 10.0.17763)"), or "unknown" when the node says none.
func NodePlatform(n *v1.Node) string {
	np, ok := platform.FromNode(n)
	if !ok {
		return "unknown"
	}
	s := np.String()
	if np.WindowsBuild != "" {
		s += " (build " + np.WindowsBuild + ")"
	}
	return s
}

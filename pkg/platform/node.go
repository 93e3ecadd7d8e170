package platform

import (
	v1 "k8s.io/api/core/v1"
)

// The beta labels predate kubernetes.io/os and kubernetes.io/arch; nodes that joined long
// ago, or are managed by old tooling, may still carry only these.
const (
	labelBetaOS   = "beta.kubernetes.io/os"
	labelBetaArch = "beta.kubernetes.io/arch"
)

// NodePlatform is what the scheduler knows about a node's platform. Architecture has no
// variant because nothing on the Node object reports one.
type NodePlatform struct {
	OS           string
	Architecture string
	// WindowsBuild is major.minor.build, e.g. "10.0.17763"; empty when the node does not say.
	WindowsBuild string
}

// FromNode reads a node's platform from the kubernetes.io/os and kubernetes.io/arch labels,
// falling back, field by field, to the beta labels and then to status.nodeInfo, and a Windows
// node's build from node.kubernetes.io/windows-build. The labels come first because they
// are what nodeAffinity and nodeSelector see, so archfilter agrees with them.
//
// Values are used verbatim: the kubelet writes them from GOOS and GOARCH, which are already
// in normalised form. ok is false when the OS or the architecture is unknown.
//
// FromNode does not allocate, and reads no label it does not need: it runs for every node
// in the Filter phase, where the node's label map is usually not in the CPU cache.
func FromNode(node *v1.Node) (np NodePlatform, ok bool) {
	if node == nil {
		return NodePlatform{}, false
	}
	labels := node.Labels
	np.OS = labels[v1.LabelOSStable]
	if np.OS == "" {
		if np.OS = labels[labelBetaOS]; np.OS == "" {
			np.OS = node.Status.NodeInfo.OperatingSystem
		}
	}
	np.Architecture = labels[v1.LabelArchStable]
	if np.Architecture == "" {
		if np.Architecture = labels[labelBetaArch]; np.Architecture == "" {
			np.Architecture = node.Status.NodeInfo.Architecture
		}
	}
	if np.OS == "windows" {
		np.WindowsBuild = labels[v1.LabelWindowsBuild]
	}
	return np, np.OS != "" && np.Architecture != ""
}

// String returns "os/arch", the form Platform.String uses, for logs and events.
func (n NodePlatform) String() string {
	return n.OS + "/" + n.Architecture
}

// Describe returns String with a Windows node's build, "windows/amd64 build
// 10.0.17763", for messages that tell nodes of different builds apart.
func (n NodePlatform) Describe() string {
	if n.WindowsBuild != "" {
		return n.String() + " build " + n.WindowsBuild
	}
	return n.String()
}

// DistinctNodePlatforms returns the distinct platforms of nodes, in the order
// first seen, leaving out nodes that report none.
func DistinctNodePlatforms(nodes []*v1.Node) []NodePlatform {
	seen := map[NodePlatform]bool{}
	var out []NodePlatform
	for _, n := range nodes {
		if np, ok := FromNode(n); ok && !seen[np] {
			seen[np] = true
			out = append(out, np)
		}
	}
	return out
}

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
// falling back, field by field, to the beta labels and then to status.nodeInfo, and its
// Windows build from node.kubernetes.io/windows-build. The labels come first because they
// are what nodeAffinity and nodeSelector see, so archfilter agrees with them.
//
// Values are used verbatim: the kubelet writes them from GOOS and GOARCH, which are already
// in normalised form. ok is false when the OS or the architecture is unknown.
//
// FromNode does not allocate; it runs for every node in the Filter phase.
func FromNode(node *v1.Node) (np NodePlatform, ok bool) {
	if node == nil {
		return NodePlatform{}, false
	}
	np = NodePlatform{
		OS:           firstNonEmpty(node.Labels[v1.LabelOSStable], node.Labels[labelBetaOS], node.Status.NodeInfo.OperatingSystem),
		Architecture: firstNonEmpty(node.Labels[v1.LabelArchStable], node.Labels[labelBetaArch], node.Status.NodeInfo.Architecture),
		WindowsBuild: node.Labels[v1.LabelWindowsBuild],
	}
	return np, np.OS != "" && np.Architecture != ""
}

// String returns "os/arch", the form Platform.String uses, for logs and events.
func (n NodePlatform) String() string {
	return n.OS + "/" + n.Architecture
}

func firstNonEmpty(a, b, c string) string {
	switch {
	case a != "":
		return a
	case b != "":
		return b
	}
	return c
}

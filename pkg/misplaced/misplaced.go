// Package misplaced finds pods that are already bound to a node that cannot run
// them: the node's platform is not among their images' (or declared) platforms,
// or a container failed with "exec format error". It reads only what it is given
// (the pod, its node, a memory-only lookup of image platforms, the pod's events)
// and the rules of package decision; kubectl archfilter report --running and the
// placement companion both call it, so they find the same pods.
package misplaced

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
)

// Kind is what was found wrong with a bound pod.
type Kind string

const (
	// NodeCannotRun: the node's platform is not among the platforms of one of
	// the pod's images (or of its archfilter.io/platforms annotation).
	NodeCannotRun Kind = "node-cannot-run"
	// ExecFormatError: a container of the pod failed with "exec format error",
	// as its status or an event on the pod says: the kernel refused its binary.
	ExecFormatError Kind = "exec-format-error"
)

// Kinds lists every Kind, in the order findings are reported.
var Kinds = []Kind{NodeCannotRun, ExecFormatError}

// execFormatError is the kernel's ENOEXEC text, as runtimes and the kubelet
// pass it on ("exec /app: exec format error").
const execFormatError = "exec format error"

// Finding is one reason a bound pod cannot run on its node.
type Finding struct {
	Kind Kind
	// Node and NodePlatform ("linux/amd64", "windows/amd64 build 10.0.17763";
	// "" when the node is not known) are where the pod is bound.
	Node         string
	NodePlatform string
	// Container is the container (or image volume) whose image cannot run
	// there, and Image its reference; both "" when the evidence names none
	// (an event without a field path, a declared annotation).
	Container     string
	ContainerKind podplatform.ContainerKind
	Image         string
	// ImagePlatforms are the platforms the image runs on, after the
	// compatibility rules, for NodeCannotRun.
	ImagePlatforms string
	// Evidence says, for people, what shows it: the platforms that exclude the
	// node, or the status or event that carries the error.
	Evidence string
}

// Input is what Find reads about one pod.
type Input struct {
	Pod *v1.Pod
	// Node is the node the pod is bound to; nil when it is not known (deleted
	// or not read), and then no NodeCannotRun finding is made.
	Node *v1.Node
	// Lookup returns the images' platforms from memory; nil when the caller
	// did not resolve them. Images it does not know, or whose resolution
	// failed, are passed over (Report.Unresolved lists them).
	Lookup decision.Lookup
	// Events are events that may concern the pod; those whose involved object
	// is not the pod are ignored.
	Events []v1.Event
	// Namespaces reads namespace labels for a namespaceSelector, as
	// Settings.Scope does.
	Namespaces decision.NamespaceLabels
}

// Report is what Find found for one pod.
type Report struct {
	Findings []Finding
	// Skip is why archfilter leaves the pod alone ("" when it is in scope),
	// judged as it was before it was bound. Exec format errors are reported
	// for every pod, since they need no registry; NodeCannotRun only for pods
	// whose images archfilter reads (ReadsImages).
	Skip decision.SkipReason
	// Unresolved are the images whose platforms lookup did not give, when
	// they were needed.
	Unresolved []string
}

// Scope says why archfilter leaves a bound pod alone, or "" when it applies:
// Settings.Scope as it judged the pod before it was bound (a bound pod is
// otherwise always out of scope), through the front-end that decides for it.
// A mirror pod, created bound by its kubelet, stays out of scope: nothing
// placed it and nothing can place it elsewhere.
func Scope(s *decision.Settings, pod *v1.Pod, namespaces decision.NamespaceLabels) decision.SkipReason {
	if _, mirror := pod.Annotations[v1.MirrorPodAnnotationKey]; mirror {
		return decision.SkipBound
	}
	unbound := *pod
	unbound.Spec.NodeName = ""
	return s.Scope(&unbound, s.FrontOf(pod), namespaces)
}

// ReadsImages reports whether Find needs pod's images' platforms: it is in
// scope (or a DaemonSet pod under daemonSetPolicy Skip, whose images archfilter
// reads to warn) and does not declare its platforms. Callers resolve the
// images of these pods only.
func ReadsImages(s *decision.Settings, pod *v1.Pod, namespaces decision.NamespaceLabels) bool {
	skip := Scope(s, pod, namespaces)
	return (skip == "" || skip.ReadsImages()) && !decision.Declared(pod)
}

// Find returns what makes in.Pod unable to run on its node: NodeCannotRun
// findings in the order of the pod's images, then ExecFormatError findings,
// one per container, from the container statuses first and the events after.
// A pod that is not bound, or has finished (Succeeded), has none.
func Find(s *decision.Settings, in Input) Report {
	pod := in.Pod
	r := Report{Skip: Scope(s, pod, in.Namespaces)}
	if pod.Spec.NodeName == "" || pod.Status.Phase == v1.PodSucceeded {
		return r
	}
	np, known := platform.FromNode(in.Node)
	where := ""
	if known {
		where = nodePlatformString(np)
	}
	if known && (r.Skip == "" || r.Skip.ReadsImages()) {
		r.Findings, r.Unresolved = cannotRun(s, pod, in.Lookup, np, where)
	}
	r.Findings = append(r.Findings, execFormatErrors(pod, in.Events, where)...)
	return r
}

func nodePlatformString(np platform.NodePlatform) string {
	if np.WindowsBuild != "" {
		return np.String() + " build " + np.WindowsBuild
	}
	return np.String()
}

// cannotRun compares the node with the declared platforms, or each image's.
func cannotRun(s *decision.Settings, pod *v1.Pod, lookup decision.Lookup, np platform.NodePlatform, where string) (out []Finding, unresolved []string) {
	if value, ok := pod.Annotations[annotations.Platforms]; ok {
		declared, err := platform.ParseList(value)
		if err != nil {
			// Not a finding: the pod cannot be judged (kubectl archfilter why says so).
			return nil, nil
		}
		if set := s.Compat.Expand(declared); !set.MatchesNode(np) {
			out = append(out, Finding{Kind: NodeCannotRun, Node: pod.Spec.NodeName, NodePlatform: where, ImagePlatforms: set.String(),
				Evidence: fmt.Sprintf("its annotation %s (%s) excludes %s", annotations.Platforms, set, where)})
		}
		return out, nil
	}
	podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
		var res, ok = decisionResult(lookup, img.Reference)
		switch {
		case !ok:
			unresolved = append(unresolved, img.Reference)
		default:
			set := s.Compat.Expand(res)
			if !set.MatchesNode(np) {
				out = append(out, Finding{Kind: NodeCannotRun, Node: pod.Spec.NodeName, NodePlatform: where,
					Container: img.Name, ContainerKind: img.Kind, Image: img.Reference, ImagePlatforms: set.String(),
					Evidence: fmt.Sprintf("%s runs on %s, not on %s", img, set, where)})
			}
		}
		return true
	})
	return out, unresolved
}

// decisionResult reads an image's platforms; ok is false when lookup is nil,
// does not know the image, or its resolution failed.
func decisionResult(lookup decision.Lookup, image string) (platform.Set, bool) {
	if lookup == nil {
		return platform.Set{}, false
	}
	res, ok := lookup(image)
	if !ok || res.Err != nil {
		return platform.Set{}, false
	}
	return res.Platforms, true
}

// IsExecFormatError reports whether text carries the kernel's ENOEXEC message.
func IsExecFormatError(text string) bool {
	return strings.Contains(strings.ToLower(text), execFormatError)
}

// execFormatErrors finds the containers whose status or events carry the error.
func execFormatErrors(pod *v1.Pod, events []v1.Event, where string) []Finding {
	var out []Finding
	seen := map[string]bool{}
	add := func(container, evidence string) {
		if seen[container] {
			return
		}
		seen[container] = true
		f := Finding{Kind: ExecFormatError, Node: pod.Spec.NodeName, NodePlatform: where, Container: container, Evidence: evidence}
		podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
			if img.Name == container && img.Kind != podplatform.KindImageVolume {
				f.ContainerKind, f.Image = img.Kind, img.Reference
				return false
			}
			return true
		})
		out = append(out, f)
	}
	for _, statuses := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range statuses {
			if evidence, ok := statusEvidence(&statuses[i]); ok {
				add(statuses[i].Name, evidence)
			}
		}
	}
	for i := range events {
		e := &events[i]
		if !concerns(e, pod) || !IsExecFormatError(e.Message) {
			continue
		}
		add(containerOfFieldPath(e.InvolvedObject.FieldPath), fmt.Sprintf("event %s: %s", e.Reason, e.Message))
	}
	return out
}

// statusEvidence reads the error from a container's state or last state.
func statusEvidence(cs *v1.ContainerStatus) (string, bool) {
	for _, st := range []struct {
		which string
		state v1.ContainerState
	}{{"state", cs.State}, {"last state", cs.LastTerminationState}} {
		if t := st.state.Terminated; t != nil && (IsExecFormatError(t.Message) || IsExecFormatError(t.Reason)) {
			return fmt.Sprintf("%s terminated (%s, exit code %d): %s", st.which, t.Reason, t.ExitCode, strings.TrimSpace(t.Message)), true
		}
		if w := st.state.Waiting; w != nil && (IsExecFormatError(w.Message) || IsExecFormatError(w.Reason)) {
			return fmt.Sprintf("%s waiting (%s): %s", st.which, w.Reason, strings.TrimSpace(w.Message)), true
		}
	}
	return "", false
}

// concerns reports whether e is about pod: same namespace and name, and the
// same UID when the event records one (a pod of the same name recreated since
// is another pod).
func concerns(e *v1.Event, pod *v1.Pod) bool {
	o := e.InvolvedObject
	return (o.Kind == "" || o.Kind == "Pod") && o.Name == pod.Name && (o.Namespace == "" || o.Namespace == pod.Namespace) &&
		(o.UID == "" || o.UID == pod.UID)
}

// containerOfFieldPath reads the container of a kubelet event's field path,
// "spec.containers{app}" or "spec.initContainers{init}"; "" for none.
func containerOfFieldPath(path string) string {
	open, end := strings.IndexByte(path, '{'), strings.LastIndexByte(path, '}')
	if open < 0 || end <= open {
		return ""
	}
	return path[open+1 : end]
}

// Evictable reports whether evicting the pod would place it again on a node
// that runs it, and if not, why: the pod must be in archfilter's scope (the
// scheduler plugin or the placement mode then places its replacement); a
// DaemonSet's pod would come back to the same node; a pod without a controller
// would not come back at all. Only pods with findings are evicted.
func (r Report) Evictable(pod *v1.Pod) (ok bool, why string) {
	switch {
	case len(r.Findings) == 0:
		return false, "nothing found"
	case r.Skip != "":
		return false, "not in archfilter's scope: " + string(r.Skip)
	case decision.IsDaemonSetPod(pod):
		return false, "a DaemonSet pod: its replacement would be bound to the same node"
	case metav1.GetControllerOfNoCopy(pod) == nil:
		return false, "no controller would recreate it"
	}
	return true, ""
}

// Has reports whether r holds a finding of kind k.
func (r Report) Has(k Kind) bool {
	for _, f := range r.Findings {
		if f.Kind == k {
			return true
		}
	}
	return false
}

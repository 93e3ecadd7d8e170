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
	// Running is the reference of the image the container runs, the spec's
	// repository at its status' digest, when that is what was judged; "" when
	// the tag was (the container has not started, or its imageID names no
	// registry digest: then ByTag is set).
	Running string
	// ByTag is set when the container ran an image that could not be read, so
	// the tag's current image was judged instead: reported, never evicted on.
	ByTag bool
	// ImagePlatforms are the platforms the image runs on, after the
	// compatibility rules, for NodeCannotRun; for ExecFormatError, those of
	// the image the container runs when known.
	ImagePlatforms string
	// Claimed is set on an ExecFormatError when the image's manifest claims
	// the node's platform: its binary contradicts its manifest, so a
	// replacement would be placed on the same platform and fail again.
	Claimed bool
	// Evidence says, for people, what shows it: the platforms that exclude the
	// node, or the status or event that carries the error.
	Evidence string
}

// NoteKind is information about a bound pod that is not a reason it cannot run.
type NoteKind string

const (
	// TagMoved: the pod runs an image that has the node's platform, but its
	// tag now points to one that does not; its replacement would be placed by
	// the new one.
	TagMoved NoteKind = "tag-moved"
	// RunningUnknown: the image a container runs cannot be read (an imageID
	// without a registry digest, or a digest its repository does not serve).
	RunningUnknown NoteKind = "running-image-unknown"
)

// Note is information about one container of a bound pod.
type Note struct {
	Kind      NoteKind
	Container string
	Image     string
	Text      string
}

// Input is what Find reads about one pod.
type Input struct {
	Pod *v1.Pod
	// Node is the node the pod is bound to; nil when it is not known (deleted
	// or not read), and then no NodeCannotRun finding is made.
	Node *v1.Node
	// Lookup returns, from memory, the platforms of the references Images
	// lists; nil when the caller did not resolve them. References it does not
	// know, or whose resolution failed, are passed over (Report.Unresolved
	// lists them).
	Lookup decision.Lookup
	// Events are events that may concern the pod; those whose involved object
	// is not the pod are ignored.
	Events []v1.Event
	// Namespaces reads namespace labels for a namespaceSelector, as
	// Settings.Scope does.
	Namespaces decision.NamespaceLabels
	// ClusterPlatforms lists the platforms of the cluster's nodes, for telling
	// whether a replacement would find a node that runs it; nil when not known
	// (then no pod is Evictable). Called only for pods with findings.
	ClusterPlatforms func() []platform.NodePlatform
}

// Report is what Find found for one pod.
type Report struct {
	Findings []Finding
	// Notes are what was learnt that is not a finding (a moved tag, a running
	// image that could not be read).
	Notes []Note
	// Skip is why archfilter leaves the pod alone ("" when it is in scope),
	// judged as it was before it was bound. Exec format errors are reported
	// for every pod, since they need no registry; NodeCannotRun only for pods
	// whose images archfilter reads (ReadsImages).
	Skip decision.SkipReason
	// Unresolved are the references whose platforms lookup did not give, when
	// they were needed.
	Unresolved []string
	// replacement is why evicting would not help, as far as the images and
	// the cluster's nodes tell ("" when it would); see Evictable.
	replacement    NotEvicted
	replacementWhy string
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
// references Images lists for these pods only.
func ReadsImages(s *decision.Settings, pod *v1.Pod, namespaces decision.NamespaceLabels) bool {
	skip := Scope(s, pod, namespaces)
	return (skip == "" || skip.ReadsImages()) && !decision.Declared(pod)
}

// Find returns what makes in.Pod unable to run on its node: NodeCannotRun
// findings in the order of the pod's images, then ExecFormatError findings,
// one per container, from the container statuses first and the events after.
// Each container is judged by the image it runs (its status' digest), not by
// what its tag points to now. A pod that is not bound, or has finished
// (Succeeded), has none.
func Find(s *decision.Settings, in Input) Report {
	pod := in.Pod
	r := Report{Skip: Scope(s, pod, in.Namespaces)}
	if pod.Spec.NodeName == "" || pod.Status.Phase == v1.PodSucceeded {
		return r
	}
	np, known := platform.FromNode(in.Node)
	where := ""
	if known {
		where = np.Describe()
	}
	j := judge{s: s, pod: pod, lookup: in.Lookup, node: np, where: where}
	if known && (r.Skip == "" || r.Skip.ReadsImages()) {
		j.cannotRun(&r)
	}
	r.Findings = append(r.Findings, j.execFormatErrors(in.Events)...)
	if len(r.Findings) > 0 {
		r.replacement, r.replacementWhy = j.replacement(&r, in.ClusterPlatforms)
	}
	return r
}

// judge holds what Find judges one pod with.
type judge struct {
	s      *decision.Settings
	pod    *v1.Pod
	lookup decision.Lookup
	node   platform.NodePlatform
	where  string
}

// platformsOf reads a reference's platforms, with the compatibility rules.
func (j *judge) platformsOf(ref string) (set platform.Set, known bool, err error) {
	if j.lookup == nil {
		return platform.Set{}, false, nil
	}
	res, ok := j.lookup(ref)
	if !ok {
		return platform.Set{}, false, nil
	}
	if res.Err != nil {
		return platform.Set{}, true, res.Err
	}
	return j.s.Compat.Expand(res.Platforms), true, nil
}

// cannotRun compares the node with the declared platforms, or with each
// container's running image (its tag's when it runs none that can be read).
func (j *judge) cannotRun(r *Report) {
	pod := j.pod
	if set, declared, err := j.s.DeclaredPlatforms(pod); declared {
		// A declaration that does not parse is not a finding: the pod cannot
		// be judged (kubectl archfilter why says so).
		if err == nil && !set.MatchesNode(j.node) {
			r.Findings = append(r.Findings, Finding{Kind: NodeCannotRun, Node: pod.Spec.NodeName, NodePlatform: j.where, ImagePlatforms: set.String(),
				Evidence: fmt.Sprintf("its annotation %s (%s) excludes %s", annotations.Platforms, set, j.where)})
		}
		return
	}
	podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
		run := RunningImage(pod, img)
		if run.Problem != "" {
			r.Notes = append(r.Notes, Note{Kind: RunningUnknown, Container: img.Name, Image: img.Reference, Text: run.Problem})
		}
		if run.Ref != "" && run.Ref != img.Reference {
			j.judgeRunning(r, img, run)
			return true
		}
		set, ok, err := j.platformsOf(img.Reference)
		if !ok || err != nil {
			r.Unresolved = append(r.Unresolved, img.Reference)
			return true
		}
		if !set.MatchesNode(j.node) {
			f := Finding{Kind: NodeCannotRun, Node: pod.Spec.NodeName, NodePlatform: j.where,
				Container: img.Name, ContainerKind: img.Kind, Image: img.Reference, ImagePlatforms: set.String(),
				Evidence: fmt.Sprintf("%s runs on %s, not on %s", img, set, j.where)}
			if run.Problem != "" {
				f.ByTag = true
				f.Evidence += " (" + run.Problem + ")"
			} else if run.Ref != "" {
				f.Running = run.Ref
			}
			r.Findings = append(r.Findings, f)
		}
		return true
	})
}

// judgeRunning judges a container by the digest it runs; the tag's current
// answer only adds a note when it moved to an image without the node's
// platform.
func (j *judge) judgeRunning(r *Report, img podplatform.Image, run Running) {
	set, ok, err := j.platformsOf(run.Ref)
	if !ok || err != nil {
		r.Unresolved = append(r.Unresolved, run.Ref)
		text := fmt.Sprintf("the image it runs, %s, could not be read", run.Ref)
		if err != nil {
			text += ": " + err.Error()
		}
		if run.From != "" {
			text += fmt.Sprintf(" (the runtime pulled it from %s; the digest is looked up in the pod's repository only)", run.From)
		}
		r.Notes = append(r.Notes, Note{Kind: RunningUnknown, Container: img.Name, Image: img.Reference, Text: text})
		return
	}
	if !set.MatchesNode(j.node) {
		r.Findings = append(r.Findings, Finding{Kind: NodeCannotRun, Node: j.pod.Spec.NodeName, NodePlatform: j.where,
			Container: img.Name, ContainerKind: img.Kind, Image: img.Reference, Running: run.Ref, ImagePlatforms: set.String(),
			Evidence: fmt.Sprintf("%s runs %s, which runs on %s, not on %s", img, run.Ref, set, j.where)})
		return
	}
	if tag, ok, err := j.platformsOf(img.Reference); ok && err == nil && !tag.MatchesNode(j.node) {
		r.Notes = append(r.Notes, Note{Kind: TagMoved, Container: img.Name, Image: img.Reference,
			Text: fmt.Sprintf("the tag now points to an image without %s (it runs on %s); the pod runs %s, which has it", j.where, tag, run.Ref)})
	}
}

// IsExecFormatError reports whether text carries the kernel's ENOEXEC message.
func IsExecFormatError(text string) bool {
	return strings.Contains(strings.ToLower(text), execFormatError)
}

// execFormatErrors finds the containers whose status or events carry the
// error, and marks those whose image claims the node's platform.
func (j *judge) execFormatErrors(events []v1.Event) []Finding {
	pod := j.pod
	var out []Finding
	seen := map[string]bool{}
	add := func(container, evidence string) {
		if seen[container] {
			return
		}
		seen[container] = true
		f := Finding{Kind: ExecFormatError, Node: pod.Spec.NodeName, NodePlatform: j.where, Container: container, Evidence: evidence}
		podplatform.ForEachImage(pod, func(img podplatform.Image) bool {
			if img.Name == container && img.Kind != podplatform.KindImageVolume {
				f.ContainerKind, f.Image = img.Kind, img.Reference
				j.claims(&f, img)
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

// claims fills f.ImagePlatforms and f.Claimed from the image the container
// runs (its tag's when it has not run one that can be read), when known.
func (j *judge) claims(f *Finding, img podplatform.Image) {
	if j.where == "" {
		return
	}
	ref, run := img.Reference, RunningImage(j.pod, img)
	if run.Ref != "" {
		ref = run.Ref
	}
	set, ok, err := j.platformsOf(ref)
	if !ok || err != nil {
		return
	}
	f.Running, f.ImagePlatforms = run.Ref, set.String()
	if set.MatchesNode(j.node) {
		f.Claimed = true
		f.Evidence += fmt.Sprintf("; yet %s claims %s (its manifest lists %s): its binary is not of the platform its manifest says (kubectl archfilter check --deep %s shows it)",
			ref, j.where, set, img.Reference)
	}
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

// Has reports whether r holds a finding of kind k.
func (r Report) Has(k Kind) bool {
	for _, f := range r.Findings {
		if f.Kind == k {
			return true
		}
	}
	return false
}

package misplaced

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

const (
	armOnly = "reg.example/api:v2"
	multi   = "reg.example/web:v1"
	armv7   = "reg.example/old:v1"
	broken  = "reg.example/gone:v1"
	unknown = "reg.example/new:v1"

	startError = `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/api": exec format error: unknown`
)

func settings(t *testing.T, mutate func(*config.ArchFilterArgs), run32 ...string) *decision.Settings {
	t.Helper()
	args := &config.ArchFilterArgs{FailurePolicy: config.FailurePolicyIgnore, DaemonSetPolicy: config.DaemonSetPolicySkip,
		ExcludedNamespaces: []string{"kube-system"}, Run32BitImagesOn: run32}
	if mutate != nil {
		mutate(args)
	}
	s, err := decision.NewSettings(args)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func lookup(t *testing.T) decision.Lookup {
	parse := func(list string) platform.Set {
		s, err := platform.ParseList(list)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	known := map[string]resolver.Result{
		armOnly: {Platforms: parse("linux/arm64")},
		multi:   {Platforms: parse("linux/amd64,linux/arm64")},
		armv7:   {Platforms: parse("linux/arm/v7")},
		broken:  {Err: errors.New("reg.example/gone:v1: NotFound")},
	}
	return func(image string) (resolver.Result, bool) {
		res, ok := known[image]
		return res, ok
	}
}

func node(name, os, arch string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelOSStable: os, v1.LabelArchStable: arch}}}
}

type podOpt func(*v1.Pod)

func boundPod(nodeName string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-1", UID: "u1",
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "api-7d9", Controller: ptr.To(true)}}},
		Spec:   v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Name: "api", Image: armOnly}}},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withContainers(images ...string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers = nil
		for i, img := range images {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c" + string(rune('0'+i)), Image: img})
		}
	}
}

func withAnnotation(k, v string) podOpt {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func withOwner(kind string) podOpt {
	return func(p *v1.Pod) {
		p.OwnerReferences = nil
		if kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: "owner", Controller: ptr.To(true)}}
		}
	}
}

func withStatus(cs v1.ContainerStatus) podOpt {
	return func(p *v1.Pod) { p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs) }
}

func event(uid types.UID, fieldPath, reason, message string) v1.Event {
	return v1.Event{InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "api-1", UID: uid, FieldPath: fieldPath},
		Reason: reason, Message: message}
}

func TestFind(t *testing.T) {
	amd, arm := node("amd-1", "linux", "amd64"), node("arm-1", "linux", "arm64")
	cannotRunAPI := Finding{Kind: NodeCannotRun, Node: "amd-1", NodePlatform: "linux/amd64", Container: "api", ContainerKind: podplatform.KindContainer,
		Image: armOnly, ImagePlatforms: "linux/arm64", Evidence: `container "api" (reg.example/api:v2) runs on linux/arm64, not on linux/amd64`}
	crashLoop := v1.ContainerStatus{Name: "api", Image: armOnly,
		State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container=api"}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128, Message: startError}}}
	for _, tc := range []struct {
		name     string
		s        *decision.Settings
		pod      *v1.Pod
		node     *v1.Node
		lookup   bool
		events   []v1.Event
		want     []Finding
		skip     decision.SkipReason
		unres    []string
		notes    []Note
		evict    NotEvicted // "" when Evictable
		evictWhy string
	}{
		{name: "arm64-only image on an amd64 node", pod: boundPod("amd-1"), node: amd, lookup: true,
			want: []Finding{cannotRunAPI}},
		{name: "on an arm64 node: nothing", pod: boundPod("arm-1"), node: arm, lookup: true, evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "not bound: nothing", pod: boundPod(""), node: amd, lookup: true, evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "succeeded: nothing", pod: boundPod("amd-1", func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }), node: amd, lookup: true, evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "node unknown: no node-cannot-run", pod: boundPod("amd-1"), lookup: true, evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "images not resolved: listed as unresolved", pod: boundPod("amd-1", withContainers(multi, unknown, broken)), node: amd, lookup: true,
			unres: []string{unknown, broken}, evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "no lookup: every image unresolved", pod: boundPod("amd-1"), node: amd, unres: []string{armOnly}, evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "the second of two images", pod: boundPod("amd-1", withContainers(multi, armOnly)), node: amd, lookup: true,
			want: []Finding{{Kind: NodeCannotRun, Node: "amd-1", NodePlatform: "linux/amd64", Container: "c1", ContainerKind: podplatform.KindContainer,
				Image: armOnly, ImagePlatforms: "linux/arm64", Evidence: `container "c1" (reg.example/api:v2) runs on linux/arm64, not on linux/amd64`}}},
		{name: "arm/v7 on arm64 without the 32-bit rule", pod: boundPod("arm-1", withContainers(armv7)), node: arm, lookup: true,
			want: []Finding{{Kind: NodeCannotRun, Node: "arm-1", NodePlatform: "linux/arm64", Container: "c0", ContainerKind: podplatform.KindContainer,
				Image: armv7, ImagePlatforms: "linux/arm/v7", Evidence: `container "c0" (reg.example/old:v1) runs on linux/arm/v7, not on linux/arm64`}},
			evict: NotEvictedNoNode, evictWhy: "a replacement's images run on linux/arm/v7, which no node of the cluster offers: it would stay Pending"},
		{name: "arm/v7 on arm64 with the 32-bit rule", s: settings(t, nil, platform.ARM64RunsARM), pod: boundPod("arm-1", withContainers(armv7)), node: arm, lookup: true,
			evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "declared platforms exclude the node", pod: boundPod("amd-1", withAnnotation(annotations.Platforms, "linux/arm64")), node: amd,
			want: []Finding{{Kind: NodeCannotRun, Node: "amd-1", NodePlatform: "linux/amd64", ImagePlatforms: "linux/arm64",
				Evidence: "its annotation archfilter.io/platforms (linux/arm64) excludes linux/amd64"}}},
		{name: "windows build in the node platform", pod: boundPod("win-1"),
			node: func() *v1.Node {
				n := node("win-1", "windows", "amd64")
				n.Labels[v1.LabelWindowsBuild] = "10.0.17763"
				return n
			}(), lookup: true,
			want: []Finding{{Kind: NodeCannotRun, Node: "win-1", NodePlatform: "windows/amd64 build 10.0.17763", Container: "api", ContainerKind: podplatform.KindContainer,
				Image: armOnly, ImagePlatforms: "linux/arm64", Evidence: `container "api" (reg.example/api:v2) runs on linux/arm64, not on windows/amd64 build 10.0.17763`}}},
		{name: "StartError in the last state, then CrashLoopBackOff", pod: boundPod("amd-1", withStatus(crashLoop)), node: amd, lookup: true,
			want: []Finding{cannotRunAPI, {Kind: ExecFormatError, Node: "amd-1", NodePlatform: "linux/amd64", Container: "api", ContainerKind: podplatform.KindContainer, Image: armOnly,
				ImagePlatforms: "linux/arm64", Evidence: "last state terminated (StartError, exit code 128): " + startError}}},
		{name: "termination message from the logs, image platforms unknown", pod: boundPod("amd-1", withContainers(unknown), withStatus(v1.ContainerStatus{Name: "c0",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 255, Message: "exec /app: exec format error\n"}}})),
			node: amd, lookup: true, unres: []string{unknown},
			want: []Finding{{Kind: ExecFormatError, Node: "amd-1", NodePlatform: "linux/amd64", Container: "c0", ContainerKind: podplatform.KindContainer, Image: unknown,
				Evidence: "state terminated (Error, exit code 255): exec /app: exec format error"}}, evict: NotEvictedNoEvidence, evictWhy: "the platforms of the image it runs are not known, so nothing shows a replacement would be placed elsewhere"},
		{name: "RunContainerError while waiting", pod: boundPod("amd-1", withContainers(unknown), withStatus(v1.ContainerStatus{Name: "c0",
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "RunContainerError", Message: "exec: \"/app\": Exec Format Error"}}})),
			node: amd, lookup: true, unres: []string{unknown},
			want: []Finding{{Kind: ExecFormatError, Node: "amd-1", NodePlatform: "linux/amd64", Container: "c0", ContainerKind: podplatform.KindContainer, Image: unknown,
				Evidence: "state waiting (RunContainerError): exec: \"/app\": Exec Format Error"}}, evict: NotEvictedNoEvidence, evictWhy: "the platforms of the image it runs are not known, so nothing shows a replacement would be placed elsewhere"},
		{name: "a crash for another reason is not a finding", pod: boundPod("arm-1", withStatus(v1.ContainerStatus{Name: "api",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}})), node: arm, lookup: true, evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "events: the pod's, once per container; another pod's and other messages ignored", pod: boundPod("amd-1", withContainers(unknown)), node: amd,
			events: []v1.Event{
				event("u1", "spec.containers{c0}", "BackOff", "Back-off restarting failed container c0"),
				event("u0", "spec.containers{c0}", "Failed", "an earlier pod of the same name: exec format error"),
				event("u1", "spec.containers{c0}", "Failed", "Error: "+startError),
				event("u1", "spec.containers{c0}", "Failed", "again: exec format error"),
				event("", "", "Failed", "exec format error, no field path"),
			},
			unres: []string{unknown},
			want: []Finding{
				{Kind: ExecFormatError, Node: "amd-1", NodePlatform: "linux/amd64", Container: "c0", ContainerKind: podplatform.KindContainer, Image: unknown,
					Evidence: "event Failed: Error: " + startError},
				{Kind: ExecFormatError, Node: "amd-1", NodePlatform: "linux/amd64", Evidence: "event Failed: exec format error, no field path"},
			}, evict: NotEvictedNoEvidence, evictWhy: "the platforms of the image it runs are not known, so nothing shows a replacement would be placed elsewhere"},
		{name: "status wins over the event for the same container", pod: boundPod("amd-1", withStatus(crashLoop)), node: amd,
			events: []v1.Event{event("u1", "spec.containers{api}", "Failed", "Error: "+startError)}, unres: []string{armOnly},
			want: []Finding{{Kind: ExecFormatError, Node: "amd-1", NodePlatform: "linux/amd64", Container: "api", ContainerKind: podplatform.KindContainer, Image: armOnly,
				Evidence: "last state terminated (StartError, exit code 128): " + startError}}, evict: NotEvictedNoEvidence, evictWhy: "the platforms of the image it runs are not known, so nothing shows a replacement would be placed elsewhere"},
		{name: "init container", pod: boundPod("amd-1", withContainers(multi), func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: armOnly}}
			p.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "setup", LastTerminationState: crashLoop.LastTerminationState}}
		}), node: amd, lookup: true,
			want: []Finding{
				{Kind: NodeCannotRun, Node: "amd-1", NodePlatform: "linux/amd64", Container: "setup", ContainerKind: podplatform.KindInit, Image: armOnly,
					ImagePlatforms: "linux/arm64", Evidence: `init container "setup" (reg.example/api:v2) runs on linux/arm64, not on linux/amd64`},
				{Kind: ExecFormatError, Node: "amd-1", NodePlatform: "linux/amd64", Container: "setup", ContainerKind: podplatform.KindInit, Image: armOnly,
					ImagePlatforms: "linux/arm64", Evidence: "last state terminated (StartError, exit code 128): " + startError},
			}},
		// Out of scope: no node-cannot-run (archfilter does not read their images),
		// exec format errors still, never evictable.
		{name: "skip annotation: exec format error only, not evictable", pod: boundPod("amd-1", withAnnotation(annotations.Skip, "true"), withStatus(crashLoop)), node: amd, lookup: true,
			skip: decision.SkipAnnotation,
			want: []Finding{{Kind: ExecFormatError, Node: "amd-1", NodePlatform: "linux/amd64", Container: "api", ContainerKind: podplatform.KindContainer, Image: armOnly,
				ImagePlatforms: "linux/arm64", Evidence: "last state terminated (StartError, exit code 128): " + startError}},
			evict: NotEvictedOutOfScope, evictWhy: "not in archfilter's scope: annotation archfilter.io/skip"},
		{name: "excluded namespace", pod: boundPod("amd-1", func(p *v1.Pod) { p.Namespace = "kube-system" }), node: amd, lookup: true,
			skip: decision.SkipExcludedNamespace, evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "mirror pod: out of scope", pod: boundPod("amd-1", withAnnotation(v1.MirrorPodAnnotationKey, "x"), withOwner("Node")), node: amd, lookup: true,
			skip: decision.SkipBound, evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "DaemonSet pod under daemonSetPolicy Skip: reported, not evicted", pod: boundPod("amd-1", withOwner("DaemonSet")), node: amd, lookup: true,
			skip: decision.SkipDaemonSet, want: []Finding{cannotRunAPI}, evict: NotEvictedOutOfScope, evictWhy: "not in archfilter's scope: DaemonSet pod (daemonSetPolicy Skip)"},
		{name: "DaemonSet pod under daemonSetPolicy Enforce: reported, not evicted", s: settings(t, func(a *config.ArchFilterArgs) { a.DaemonSetPolicy = config.DaemonSetPolicyEnforce }),
			pod: boundPod("amd-1", withOwner("DaemonSet")), node: amd, lookup: true,
			want: []Finding{cannotRunAPI}, evict: NotEvictedDaemonSet, evictWhy: "a DaemonSet pod: its replacement would be bound to the same node"},
		{name: "bare pod: reported, not evicted", pod: boundPod("amd-1", withOwner("")), node: amd, lookup: true,
			want: []Finding{cannotRunAPI}, evict: NotEvictedNoController, evictWhy: "no controller would recreate it"},
		{name: "scope as before binding: the archfilter scheduler's pod", s: func() *decision.Settings {
			s := settings(t, nil)
			s.Schedulers = sets.New(decision.DefaultSchedulerName)
			return s
		}(), pod: boundPod("amd-1", func(p *v1.Pod) { p.Spec.SchedulerName = decision.DefaultSchedulerName }), node: amd, lookup: true,
			want: []Finding{cannotRunAPI}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			if s == nil {
				s = settings(t, nil)
			}
			in := Input{Pod: tc.pod, Node: tc.node, Events: tc.events, ClusterPlatforms: func() []platform.NodePlatform {
				return []platform.NodePlatform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
			}}
			if tc.lookup {
				in.Lookup = lookup(t)
			}
			r := Find(s, in)
			if diff := cmp.Diff(tc.want, r.Findings); diff != "" {
				t.Errorf("findings (-want,+got):\n%s", diff)
			}
			if r.Skip != tc.skip {
				t.Errorf("skip %q, want %q", r.Skip, tc.skip)
			}
			if diff := cmp.Diff(tc.unres, r.Unresolved); diff != "" {
				t.Errorf("unresolved (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.notes, r.Notes); diff != "" {
				t.Errorf("notes (-want,+got):\n%s", diff)
			}
			evict, why := r.Evictable(tc.pod)
			if evict != tc.evict || why != tc.evictWhy {
				t.Errorf("Evictable = %q %q, want %q %q", evict, why, tc.evict, tc.evictWhy)
			}
		})
	}
}

func TestReadsImages(t *testing.T) {
	s := settings(t, nil)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"in scope", boundPod("amd-1"), true},
		{"declared", boundPod("amd-1", withAnnotation(annotations.Platforms, "linux/arm64")), false},
		{"skipped", boundPod("amd-1", withAnnotation(annotations.Skip, "true")), false},
		{"DaemonSet under Skip", boundPod("amd-1", withOwner("DaemonSet")), true},
		{"mirror pod", boundPod("amd-1", withAnnotation(v1.MirrorPodAnnotationKey, "x")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReadsImages(s, tc.pod, nil); got != tc.want {
				t.Errorf("ReadsImages = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestContainerOfFieldPath(t *testing.T) {
	for path, want := range map[string]string{
		"spec.containers{app}":      "app",
		"spec.initContainers{init}": "init",
		"":                          "",
		"spec.containers":           "",
		"spec.containers}{":         "",
	} {
		if got := containerOfFieldPath(path); got != want {
			t.Errorf("containerOfFieldPath(%q) = %q, want %q", path, got, want)
		}
	}
}

// Digests of images a tag pointed to before: the API's arm64-only build, and the web
// image's build that ran on both platforms.
const (
	oldDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	webOld    = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	absent    = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
)

// runningLookup knows the tags as they resolve now and the digests pods still run:
// reg.example/web:v1 now points to an amd64-only image, while its old digest ran on
// both; reg.example/api:v2 is now multi-platform, while its old digest was arm64-only.
func runningLookup(t *testing.T) decision.Lookup {
	parse := func(list string) platform.Set {
		s, err := platform.ParseList(list)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	known := map[string]resolver.Result{
		multi:                            {Platforms: parse("linux/amd64")},
		"reg.example/web@" + webOld:      {Platforms: parse("linux/amd64,linux/arm64")},
		armOnly:                          {Platforms: parse("linux/amd64,linux/arm64")},
		"reg.example/api@" + oldDigest:   {Platforms: parse("linux/arm64")},
		"reg.example/api@" + absent:      {Err: errors.New("reg.example/api@" + absent + ": MANIFEST_UNKNOWN")},
		"reg.example/riscv:v1":           {Platforms: parse("linux/riscv64")},
		"reg.example/riscv@" + oldDigest: {Platforms: parse("linux/arm64")},
	}
	return func(image string) (resolver.Result, bool) {
		res, ok := known[image]
		return res, ok
	}
}

func running(name, image, imageID string) podOpt {
	return withStatus(v1.ContainerStatus{Name: name, Image: image, ImageID: imageID,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}})
}

// TestJudgesTheImageThatRuns: a container is judged by the digest its status names,
// not by what its tag points to now; evicting is only for what eviction can heal.
func TestJudgesTheImageThatRuns(t *testing.T) {
	amd, arm := node("amd-1", "linux", "amd64"), node("arm-1", "linux", "arm64")
	lyingStatus := v1.ContainerStatus{Name: "c0", Image: multi, ImageID: "reg.example/web@" + webOld,
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128, Message: startError}}}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		node     *v1.Node
		want     []Finding
		notes    []Note
		unres    []string
		evict    NotEvicted
		evictWhy string
	}{
		{name: "moved tag: the pod runs an image with the node's platform, a note, no finding",
			pod: boundPod("arm-1", withContainers(multi), running("c0", multi, "reg.example/web@"+webOld)), node: arm,
			notes: []Note{{Kind: TagMoved, Container: "c0", Image: multi,
				Text: "the tag now points to an image without linux/arm64 (it runs on linux/amd64); the pod runs reg.example/web@" + webOld + ", which has it"}},
			evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "the running digest lacks the node's platform, the tag has it now: evicted, its replacement runs",
			pod: boundPod("amd-1", running("api", armOnly, "reg.example/api@"+oldDigest)), node: amd,
			want: []Finding{{Kind: NodeCannotRun, Node: "amd-1", NodePlatform: "linux/amd64", Container: "api", ContainerKind: podplatform.KindContainer,
				Image: armOnly, Running: "reg.example/api@" + oldDigest, ImagePlatforms: "linux/arm64",
				Evidence: `container "api" (reg.example/api:v2) runs reg.example/api@` + oldDigest + `, which runs on linux/arm64, not on linux/amd64`}}},
		{name: "a runtime's docker-pullable:// prefix",
			pod: boundPod("amd-1", running("api", armOnly, "docker-pullable://reg.example/api@"+oldDigest)), node: amd,
			want: []Finding{{Kind: NodeCannotRun, Node: "amd-1", NodePlatform: "linux/amd64", Container: "api", ContainerKind: podplatform.KindContainer,
				Image: armOnly, Running: "reg.example/api@" + oldDigest, ImagePlatforms: "linux/arm64",
				Evidence: `container "api" (reg.example/api:v2) runs reg.example/api@` + oldDigest + `, which runs on linux/arm64, not on linux/amd64`}}},
		{name: "the image lies: exec format error on a platform its manifest claims, never evicted",
			pod: boundPod("arm-1", withContainers(multi), withStatus(lyingStatus)), node: arm,
			want: []Finding{{Kind: ExecFormatError, Node: "arm-1", NodePlatform: "linux/arm64", Container: "c0", ContainerKind: podplatform.KindContainer,
				Image: multi, Running: "reg.example/web@" + webOld, ImagePlatforms: "linux/amd64,linux/arm64", Claimed: true,
				Evidence: "state terminated (StartError, exit code 128): " + startError + "; yet reg.example/web@" + webOld +
					" claims linux/arm64 (its manifest lists linux/amd64,linux/arm64): its binary is not of the platform its manifest says (kubectl archfilter check --deep reg.example/web:v1 shows it)"}},
			notes: []Note{{Kind: TagMoved, Container: "c0", Image: multi,
				Text: "the tag now points to an image without linux/arm64 (it runs on linux/amd64); the pod runs reg.example/web@" + webOld + ", which has it"}},
			evict: NotEvictedImageLies,
			evictWhy: `container "c0" fails with exec format error on linux/arm64, which its image reg.example/web@` + webOld +
				` claims: a replacement would be placed on the same platform and fail again (kubectl archfilter check --deep reg.example/web:v1 shows which binary is wrong)`},
		{name: "an imageID without a registry digest: judged by the tag, reported, not evicted",
			pod: boundPod("amd-1", withContainers("reg.example/riscv:v1"), running("c0", "reg.example/riscv:v1", oldDigest)), node: amd,
			want: []Finding{{Kind: NodeCannotRun, Node: "amd-1", NodePlatform: "linux/amd64", Container: "c0", ContainerKind: podplatform.KindContainer,
				Image: "reg.example/riscv:v1", ImagePlatforms: "linux/riscv64", ByTag: true,
				Evidence: `container "c0" (reg.example/riscv:v1) runs on linux/riscv64, not on linux/amd64 (its status' imageID "` + oldDigest +
					`" names no registry digest, so the image that runs cannot be read; judged by the tag)`}},
			notes: []Note{{Kind: RunningUnknown, Container: "c0", Image: "reg.example/riscv:v1",
				Text: `its status' imageID "` + oldDigest + `" names no registry digest, so the image that runs cannot be read; judged by the tag`}},
			evict: NotEvictedRunningUnknown, evictWhy: "the image it runs cannot be read, so nothing shows it lacks linux/amd64 (judged by the tag only)"},
		{name: "a mirror's imageID whose digest the pod's repository does not serve: unresolved, named, no finding",
			pod: boundPod("amd-1", running("api", armOnly, "mirror.example/api@"+absent)), node: amd,
			unres: []string{"reg.example/api@" + absent},
			notes: []Note{{Kind: RunningUnknown, Container: "api", Image: armOnly,
				Text: "the image it runs, reg.example/api@" + absent + ", could not be read: reg.example/api@" + absent +
					": MANIFEST_UNKNOWN (the runtime pulled it from mirror.example/api; the digest is looked up in the pod's repository only)"}},
			evict: NotEvictedNothingFound, evictWhy: "nothing found"},
		{name: "a mirror's imageID whose digest the pod's repository serves: judged",
			pod: boundPod("amd-1", running("api", armOnly, "mirror.example/api@"+oldDigest)), node: amd,
			want: []Finding{{Kind: NodeCannotRun, Node: "amd-1", NodePlatform: "linux/amd64", Container: "api", ContainerKind: podplatform.KindContainer,
				Image: armOnly, Running: "reg.example/api@" + oldDigest, ImagePlatforms: "linux/arm64",
				Evidence: `container "api" (reg.example/api:v2) runs reg.example/api@` + oldDigest + `, which runs on linux/arm64, not on linux/amd64`}}},
		{name: "the replacement's image runs on no node of the cluster: not evicted",
			pod: boundPod("amd-1", withContainers("reg.example/riscv:v1"), running("c0", "reg.example/riscv:v1", "reg.example/riscv@"+oldDigest)), node: amd,
			want: []Finding{{Kind: NodeCannotRun, Node: "amd-1", NodePlatform: "linux/amd64", Container: "c0", ContainerKind: podplatform.KindContainer,
				Image: "reg.example/riscv:v1", Running: "reg.example/riscv@" + oldDigest, ImagePlatforms: "linux/arm64",
				Evidence: `container "c0" (reg.example/riscv:v1) runs reg.example/riscv@` + oldDigest + `, which runs on linux/arm64, not on linux/amd64`}},
			evict: NotEvictedNoNode, evictWhy: "a replacement's images run on linux/riscv64, which no node of the cluster offers: it would stay Pending"},
		{name: "a replacement's image that did not resolve: not evicted",
			pod: boundPod("amd-1", withContainers(armOnly, unknown), running("c0", armOnly, "reg.example/api@"+oldDigest)), node: amd,
			want: []Finding{{Kind: NodeCannotRun, Node: "amd-1", NodePlatform: "linux/amd64", Container: "c0", ContainerKind: podplatform.KindContainer,
				Image: armOnly, Running: "reg.example/api@" + oldDigest, ImagePlatforms: "linux/arm64",
				Evidence: `container "c0" (reg.example/api:v2) runs reg.example/api@` + oldDigest + `, which runs on linux/arm64, not on linux/amd64`}},
			unres: []string{unknown},
			evict: NotEvictedNoNode, evictWhy: "the images a replacement would start did not all resolve, so nothing shows it would find a node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Find(settings(t, nil), Input{Pod: tc.pod, Node: tc.node, Lookup: runningLookup(t), ClusterPlatforms: func() []platform.NodePlatform {
				return []platform.NodePlatform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
			}})
			if diff := cmp.Diff(tc.want, r.Findings); diff != "" {
				t.Errorf("findings (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.notes, r.Notes); diff != "" {
				t.Errorf("notes (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.unres, r.Unresolved); diff != "" {
				t.Errorf("unresolved (-want,+got):\n%s", diff)
			}
			evict, why := r.Evictable(tc.pod)
			if evict != tc.evict || why != tc.evictWhy {
				t.Errorf("Evictable = %q %q, want %q %q", evict, why, tc.evict, tc.evictWhy)
			}
		})
	}
}

func TestImages(t *testing.T) {
	pod := boundPod("amd-1", withContainers(armOnly, multi, "reg.example/x@"+absent), running("c0", armOnly, "mirror.example/api@"+oldDigest),
		running("c1", multi, "sha256:abc"), running("c2", "reg.example/x@"+absent, "reg.example/x@"+absent))
	want := []string{armOnly, "reg.example/api@" + oldDigest, multi, "reg.example/x@" + absent}
	if diff := cmp.Diff(want, Images(pod)); diff != "" {
		t.Errorf("Images (-want,+got):\n%s", diff)
	}
}

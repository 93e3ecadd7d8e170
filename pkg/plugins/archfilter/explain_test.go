package archfilter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// withoutReason returns the drained events of every reason but one.
func withoutReason(evs []string, reason string) []string {
	var out []string
	for _, e := range evs {
		if len(withReason([]string{e}, reason)) == 0 {
			out = append(out, e)
		}
	}
	return out
}

// explained is the ImagePlatformsResolved event naming what excludes each node
// platform.
func explained(set string, exclusions string) string {
	return "Normal " + EventResolved + " Images of the pod run on " + set + "; on the cluster's other nodes: " + exclusions
}

const ltsc2019 = "windows/amd64 build " + windowsBuildLTSC2019

// TestPreFilterExplainsExclusionsOnce: Filter's reason names only the pod's
// platforms, so a pod whose cycle excludes node platforms gets, once, the event
// that says what excludes each: whether its images were cached when it arrived, its
// platforms declared, or narrowed by its own constraints. Not once per cycle, and not
// for a pod nothing excludes from a node, nor one PreFilter rejects (its reason says
// why) or one scheduled fail-open (ArchFilterFailOpen says why).
func TestPreFilterExplainsExclusionsOnce(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		// want is the ImagePlatformsResolved event, "" for none.
		want string
	}{
		{
			name: "cached images, each platform excluded by another container",
			pod:  makePod("p", imgMulti, imgAMD64).Obj(),
			want: explained("linux/amd64", `container "con1" (`+imgAMD64+`) does not run on linux/arm64; `+
				`container "con0" (`+imgMulti+`) does not run on linux/s390x, `+ltsc2019),
		},
		{
			name: "riscv64 only: every node platform",
			pod:  makePod("p", imgRISCV).Obj(),
			want: explained("linux/riscv64", `container "con0" (`+imgRISCV+`) does not run on linux/amd64, linux/arm64, linux/s390x, `+ltsc2019),
		},
		{
			name: "platforms annotation",
			pod:  makePod("p", imgNewMain).Annotation(annotations.Platforms, "linux/arm64").Obj(),
			want: explained("linux/arm64", "its annotation "+annotations.Platforms+" excludes linux/amd64, linux/s390x, "+ltsc2019),
		},
		{
			name: "own nodeSelector",
			pod:  makePod("p", imgMulti).NodeSelector(map[string]string{v1.LabelArchStable: "arm64"}).Obj(),
			want: explained("linux/arm64", "its own spec.os, nodeSelector or node affinity excludes linux/amd64; "+
				`container "con0" (`+imgMulti+`) does not run on linux/s390x, `+ltsc2019),
		},
		{
			name: "runs on every node platform: Skip, nothing excluded",
			pod:  makePod("p", imgEverywhere).Obj(),
		},
		{
			name: "images share no platform: PreFilter's reason says why",
			pod:  makePod("p", imgAMD64, imgARM64).Obj(),
		},
		{
			name: "fail open: ArchFilterFailOpen says why",
			pod:  makePod("p", imgFailed, imgARM64).Obj(),
		},
		{
			name: "skip annotation",
			pod:  makePod("p", imgRISCV).Annotation(annotations.Skip, "true").Obj(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			h := newHarness(t, ctx, harnessConfig{})
			var got []string
			for range 3 {
				h.preFilter(ctx, tc.pod)
				got = append(got, withReason(h.events(), EventResolved)...)
			}
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s events over three cycles (-want,+got):\n%s", EventResolved, diff)
			}
		})
	}
}

// TestHeldPodExplainedOnce: a pod held until its images resolved got the event then;
// its cycles do not repeat it.
func TestHeldPodExplainedOnce(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	pod := makePod("p", imgNewMain).Obj()
	if diff := cmp.Diff(waiting(), statusOf(h.preEnqueue(ctx, pod))); diff != "" {
		t.Fatalf("PreEnqueue (-want,+got):\n%s", diff)
	}
	h.res.complete(imgNewMain, resolver.Result{Platforms: mustSet(t, "linux/riscv64")})
	if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, pod))); diff != "" {
		t.Fatalf("PreEnqueue after resolution (-want,+got):\n%s", diff)
	}
	for range 2 {
		h.preFilter(ctx, pod)
	}
	evs := withReason(h.events(), EventResolved)
	if len(evs) != 1 || !cmp.Equal(evs[0], explained("linux/riscv64", `container "con0" (`+imgNewMain+`) does not run on linux/amd64, linux/arm64, linux/s390x, `+ltsc2019)) {
		t.Errorf("%s events %q, want the one recorded at resolution", EventResolved, evs)
	}
}

// TestExplainedAgainForANewPlatform: nodes of a platform new to the cluster are
// rejected too; the pod's next cycle says what excludes it, once.
func TestExplainedAgainForANewPlatform(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{nodes: []*v1.Node{linuxNode(nodeAMD64, "amd64")}})
	pod := makePod("p", imgARM64).Obj()
	h.preFilter(ctx, pod)
	first := explained("linux/arm64", `container "con0" (`+imgARM64+`) does not run on linux/amd64`)
	if diff := cmp.Diff([]string{first}, withReason(h.events(), EventResolved)); diff != "" {
		t.Errorf("first cycle's events (-want,+got):\n%s", diff)
	}
	if _, err := h.client.CoreV1().Nodes().Create(ctx, linuxNode(nodeS390X, "s390x"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.poll(ctx, "the s390x node in the table", func() bool { return len(h.pl.platforms.snapshot().ids) == 2 })
	for range 2 {
		h.preFilter(ctx, pod)
	}
	second := explained("linux/arm64", `container "con0" (`+imgARM64+`) does not run on linux/amd64, linux/s390x`)
	if diff := cmp.Diff([]string{second}, withReason(h.events(), EventResolved)); diff != "" {
		t.Errorf("events after an s390x node joined (-want,+got):\n%s", diff)
	}
}

// TestStandbyDoesNotExplain: a process that does not lead records nothing, and does
// not count the pod as explained, so the leader's cycle still records the event.
func TestStandbyDoesNotExplain(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{standby: true})
	pod := makePod("p", imgRISCV).Obj()
	h.preFilter(ctx, pod)
	if evs := h.events(); len(evs) != 0 {
		t.Errorf("a standby recorded %q", evs)
	}
	h.pl.explained.mu.Lock()
	defer h.pl.explained.mu.Unlock()
	if n := len(h.pl.explained.pods); n != 0 {
		t.Errorf("a standby counts %d pods as explained, want 0", n)
	}
}

// TestDeletedPodForgotten: the pods explained are forgotten when they are deleted.
func TestDeletedPodForgotten(t *testing.T) {
	ctx := testContext(t)
	pod := makePod("p", imgRISCV).Obj()
	h := newHarness(t, ctx, harnessConfig{objects: []runtime.Object{pod.DeepCopy()}})
	h.poll(ctx, "pod in the informer", func() bool {
		_, err := h.factory.Core().V1().Pods().Lister().Pods("default").Get("p")
		return err == nil
	})
	h.preFilter(ctx, pod)
	if evs := withReason(h.events(), EventResolved); len(evs) != 1 {
		t.Fatalf("%s events %q, want one", EventResolved, evs)
	}
	if err := h.client.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.poll(ctx, "the deleted pod to be forgotten", func() bool {
		h.pl.explained.mu.Lock()
		defer h.pl.explained.mu.Unlock()
		return len(h.pl.explained.pods) == 0
	})
}

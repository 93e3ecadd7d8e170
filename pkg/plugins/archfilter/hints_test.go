package archfilter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
)

func TestEventsToRegister(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	got, err := h.pl.EventsToRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}},
		{Event: podSelfUpdate},
	}
	for i := range got {
		if got[i].QueueingHintFn == nil {
			t.Errorf("event %v has no queueing hint", got[i].Event)
		}
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(fwk.ClusterEventWithHint{}, "QueueingHintFn")); diff != "" {
		t.Errorf("EventsToRegister (-want,+got):\n%s", diff)
	}
}

func relabel(node *v1.Node, key, value string) *v1.Node {
	n := node.DeepCopy()
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[key] = value
	return n
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	amd := linuxNode("new-node", "amd64")
	arm := linuxNode("new-node", "arm64")
	s390x := linuxNode("new-node", "s390x")
	betaARM := makeNode("new-node", map[string]string{"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "arm64"})
	bare := makeNode("new-node", nil)
	win2019 := makeNode("new-node", map[string]string{v1.LabelOSStable: "windows", v1.LabelArchStable: "amd64", v1.LabelWindowsBuild: windowsBuildLTSC2019})
	win2022 := relabel(win2019, v1.LabelWindowsBuild, "10.0.20348")

	tests := []struct {
		name   string
		policy config.FailurePolicy
		pod    *v1.Pod
		// held: PreEnqueue holds the pod first (its images are resolving).
		held           bool
		oldObj, newObj any
		want           fwk.QueueingHint
		wantErr        bool
	}{
		{name: "new object is not a node", pod: makePod("p", imgARM64).Obj(), newObj: "node", want: fwk.Queue, wantErr: true},
		{name: "old object is not a node", pod: makePod("p", imgARM64).Obj(), oldObj: makePod("x").Obj(), newObj: arm, want: fwk.Queue, wantErr: true},
		{name: "node of the pod's platform added", pod: makePod("p", imgARM64).Obj(), newObj: arm, want: fwk.Queue},
		{name: "beta-labelled node of the pod's platform added", pod: makePod("p", imgARM64).Obj(), newObj: betaARM, want: fwk.Queue},
		{name: "node of another platform added", pod: makePod("p", imgARM64).Obj(), newObj: amd, want: fwk.QueueSkip},
		{name: "node without platform labels added (Filter accepts it)", pod: makePod("p", imgARM64).Obj(), newObj: bare, want: fwk.Queue},
		{name: "relabelled to the pod's platform", pod: makePod("p", imgARM64).Obj(), oldObj: amd, newObj: arm, want: fwk.Queue},
		{name: "relabelled away from the pod's platform", pod: makePod("p", imgARM64).Obj(), oldObj: arm, newObj: amd, want: fwk.QueueSkip},
		{name: "relabelled between two platforms the pod does not run on", pod: makePod("p", imgARM64).Obj(), oldObj: amd, newObj: s390x, want: fwk.QueueSkip},
		{name: "label change that keeps the platform", pod: makePod("p", imgAMD64).Obj(), oldObj: amd, newObj: relabel(amd, v1.LabelTopologyZone, "zone-b"), want: fwk.QueueSkip},
		{name: "beta labels replaced by stable ones: same platform", pod: makePod("p", imgARM64).Obj(), oldObj: betaARM, newObj: arm, want: fwk.QueueSkip},
		{name: "labels removed", pod: makePod("p", imgAMD64).Obj(), oldObj: amd, newObj: bare, want: fwk.Queue},
		{name: "old node in a DeletedFinalStateUnknown", pod: makePod("p", imgARM64).Obj(), oldObj: cache.DeletedFinalStateUnknown{Key: "new-node", Obj: amd}, newObj: arm, want: fwk.Queue},
		{name: "windows build label changed to the image's build", pod: makePod("p", imgWin2022).Obj(), oldObj: win2019, newObj: win2022, want: fwk.Queue},
		{name: "windows node of another build added", pod: makePod("p", imgWin2022).Obj(), newObj: win2019, want: fwk.QueueSkip},
		{name: "declared platforms", pod: makePod("p", imgNewMain).Annotation(annotations.Platforms, "linux/s390x").Obj(), newObj: s390x, want: fwk.Queue},
		{name: "data-only image: any node", pod: makePod("p", imgData).Obj(), newObj: s390x, want: fwk.Queue},
		{name: "images without a common platform", pod: makePod("p", imgAMD64, imgARM64).Obj(), newObj: arm, want: fwk.QueueSkip},
		{name: "own constraint conflicts with the images", pod: makePod("p", imgAMD64).NodeSelector(map[string]string{v1.LabelArchStable: "arm64"}).Obj(), newObj: arm, want: fwk.QueueSkip},
		{name: "invalid declared annotation", pod: makePod("p", imgAMD64).Annotation(annotations.Platforms, "amd64").Obj(), newObj: amd, want: fwk.QueueSkip},
		{name: "resolution failed, failurePolicy Fail", policy: config.FailurePolicyFail, pod: makePod("p", imgFailed).Obj(), newObj: arm, want: fwk.QueueSkip},
		{name: "resolution pending, failurePolicy Fail", policy: config.FailurePolicyFail, pod: makePod("p", imgNewMain).Obj(), held: true, newObj: arm, want: fwk.QueueSkip},
		{name: "resolution pending (held at PreEnqueue), failurePolicy Ignore", policy: config.FailurePolicyIgnore, pod: makePod("p", imgNewMain).Obj(), held: true, newObj: arm, want: fwk.QueueSkip},
		{name: "resolution pending beside a known image (held), failurePolicy Ignore", policy: config.FailurePolicyIgnore, pod: makePod("p", imgNewMain, imgARM64).Obj(), held: true, newObj: arm, want: fwk.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			logger := klog.FromContext(ctx)
			args := defaultArgs(t)
			if tc.policy != "" {
				args.FailurePolicy = tc.policy
			}
			h := newHarness(t, ctx, harnessConfig{args: args})
			if tc.held {
				if s := h.preEnqueue(ctx, tc.pod); s.IsSuccess() {
					t.Fatalf("PreEnqueue admitted the pod")
				}
			}
			asyncBefore := len(h.res.asyncCalls())
			var got fwk.QueueingHint
			var err error
			h.res.deny("QueueingHint", func() { got, err = h.pl.isSchedulableAfterNodeChange(logger, tc.pod, tc.oldObj, tc.newObj) })
			if (err != nil) != tc.wantErr {
				t.Errorf("error = %v, want error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
			if n := len(h.res.asyncCalls()) - asyncBefore; n != 0 {
				t.Errorf("the hint started %d resolutions", n)
			}
		})
	}
}

func TestIsSchedulableAfterPodUpdate(t *testing.T) {
	base := func() *st.PodWrapper { return makePod("p", imgMulti).Label("app", "web") }
	pod := base().Obj()
	update := func(mutate func(*v1.Pod)) *v1.Pod {
		p := base().Obj()
		mutate(p)
		return p
	}
	tests := []struct {
		name           string
		oldObj, newObj any
		want           fwk.QueueingHint
		wantErr        bool
	}{
		{name: "new object is not a pod", oldObj: pod, newObj: linuxNode("n", "amd64"), want: fwk.Queue, wantErr: true},
		{name: "old object is not a pod", oldObj: "pod", newObj: pod, want: fwk.Queue, wantErr: true},
		{name: "no old object", newObj: pod, want: fwk.QueueSkip},
		{name: "another pod", oldObj: makePod("q", imgMulti).Obj(), newObj: makePod("q", imgARM64).Obj(), want: fwk.QueueSkip},
		{name: "container image changed", oldObj: pod, newObj: update(func(p *v1.Pod) { p.Spec.Containers[0].Image = imgARM64 }), want: fwk.Queue},
		{name: "container added", oldObj: pod, newObj: update(func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Image: imgAMD64})
		}), want: fwk.Queue},
		{name: "init container image changed", oldObj: update(func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: imgMulti}}
		}), newObj: update(func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: imgARM64}}
		}), want: fwk.Queue},
		{name: "image volume changed", oldObj: update(func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: imgData}}}}
		}), newObj: update(func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: imgARM64}}}}
		}), want: fwk.Queue},
		{name: "ephemeral container added", oldObj: pod, newObj: update(func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: imgAMD64}}}
		}), want: fwk.QueueSkip},
		{name: "platforms annotation added", oldObj: pod, newObj: update(func(p *v1.Pod) {
			p.Annotations = map[string]string{annotations.Platforms: "linux/arm64"}
		}), want: fwk.Queue},
		{name: "skip annotation added", oldObj: pod, newObj: update(func(p *v1.Pod) {
			p.Annotations = map[string]string{annotations.Skip: "true"}
		}), want: fwk.Queue},
		{name: "nodeSelector changed", oldObj: pod, newObj: update(func(p *v1.Pod) {
			p.Spec.NodeSelector = map[string]string{v1.LabelArchStable: "amd64"}
		}), want: fwk.Queue},
		{name: "affinity changed", oldObj: pod, newObj: base().NodeAffinityIn(v1.LabelArchStable, []string{"arm64"}, st.NodeSelectorTypeMatchExpressions).Obj(), want: fwk.Queue},
		{name: "spec.os changed", oldObj: pod, newObj: withOS(base().Obj(), v1.Linux), want: fwk.Queue},
		{name: "label changed", oldObj: pod, newObj: update(func(p *v1.Pod) { p.Labels["app"] = "api" }), want: fwk.QueueSkip},
		{name: "preferred-platforms annotation changed (scoring only)", oldObj: pod, newObj: update(func(p *v1.Pod) {
			p.Annotations = map[string]string{annotations.PreferredPlatforms: "linux/arm64=100"}
		}), want: fwk.QueueSkip},
		{name: "unrelated annotation", oldObj: pod, newObj: update(func(p *v1.Pod) {
			p.Annotations = map[string]string{"example.com/owner": "team"}
		}), want: fwk.QueueSkip},
		{name: "status changed", oldObj: pod, newObj: update(func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
		}), want: fwk.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			logger := klog.FromContext(ctx)
			h := newHarness(t, ctx, harnessConfig{})
			var got fwk.QueueingHint
			var err error
			h.res.deny("QueueingHint", func() { got, err = h.pl.isSchedulableAfterPodUpdate(logger, pod, tc.oldObj, tc.newObj) })
			if (err != nil) != tc.wantErr {
				t.Errorf("error = %v, want error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}

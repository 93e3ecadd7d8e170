package archfilter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
)

func TestSignPod(t *testing.T) {
	tests := []struct {
		name        string
		failFast    bool
		pod         *v1.Pod
		wantCode    fwk.Code
		wantAllowed []string
		wantPref    string
	}{
		{
			name:        "multi-arch image",
			pod:         makePod("p", imgMulti).Obj(),
			wantAllowed: []string{"linux/amd64@", "linux/arm64@"},
		},
		{
			name:        "intersection of two images",
			pod:         makePod("p", imgMulti, imgARM64).Obj(),
			wantAllowed: []string{"linux/arm64@"},
		},
		{
			name:        "Windows builds are part of the signature",
			pod:         makePod("p", imgWin2022).Obj(),
			wantAllowed: []string{"windows/amd64@10.0.20348.2227"},
		},
		{
			name:        "data-only image does not constrain",
			pod:         makePod("p", imgData).Obj(),
			wantAllowed: []string{"*"},
		},
		{
			name:        "opted out",
			pod:         makePod("p", imgARM64).Annotation(annotations.Skip, "true").Obj(),
			wantAllowed: []string{"*"},
		},
		{
			name:        "own preference is signed",
			pod:         makePod("p", imgMulti).Annotation(annotations.PreferredPlatforms, "linux/arm64=50").Obj(),
			wantAllowed: []string{"linux/amd64@", "linux/arm64@"},
			wantPref:    "linux/arm64=50",
		},
		{
			name:     "images with no common platform are not signed",
			pod:      makePod("p", imgAMD64, imgARM64).Obj(),
			wantCode: fwk.Unschedulable,
		},
		{
			name:     "failed resolution under failurePolicy Fail is not signed",
			failFast: true,
			pod:      makePod("p", imgFailed).Obj(),
			wantCode: fwk.Unschedulable,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			args := defaultArgs(t)
			if tc.failFast {
				args.FailurePolicy = config.FailurePolicyFail
			}
			h := newHarness(t, ctx, harnessConfig{args: args})
			var (
				frags  []fwk.SignFragment
				status *fwk.Status
			)
			h.res.deny("SignPod", func() { frags, status = h.pl.SignPod(ctx, tc.pod) })
			if status.Code() != tc.wantCode {
				t.Fatalf("SignPod status = %v, want code %v", status, tc.wantCode)
			}
			if tc.wantCode != fwk.Success {
				return
			}
			want := []fwk.SignFragment{
				{Key: SignerAllowedPlatforms, Value: tc.wantAllowed},
				{Key: SignerPreferredPlatforms, Value: tc.wantPref},
			}
			if diff := cmp.Diff(want, frags); diff != "" {
				t.Errorf("fragments (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestSignPodFollowsResolution checks that two pods of one image sign alike,
// and that a pod signs differently once its image resolves to other platforms
// (a moved tag), so a batched result is never reused across that change.
func TestSignPodFollowsResolution(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	sign := func(pod *v1.Pod) []fwk.SignFragment {
		frags, status := h.pl.SignPod(ctx, pod)
		if !status.IsSuccess() {
			t.Fatalf("SignPod(%s): %v", pod.Name, status)
		}
		return frags
	}
	a, b := sign(makePod("a", imgMulti).Obj()), sign(makePod("b", imgMulti).Obj())
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two pods of one image sign differently (-a,+b):\n%s", diff)
	}
	h.res.set(imgMulti, standardResults(t, h.clock.Now())[imgARM64])
	if c := sign(makePod("c", imgMulti).Obj()); cmp.Equal(a, c) {
		t.Errorf("signature did not change when the image's platforms did: %v", c)
	}
}

// BenchmarkSignPod is what the scheduling queue pays per pod added or updated
// (1.35+: the queue signs pods, not the cycle): the pod's decision from memory,
// as PreFilter computes it once per cycle.
func BenchmarkSignPod(b *testing.B) {
	ctx, h := benchHarness(b)
	pod := benchPod()
	b.ReportAllocs()
	for b.Loop() {
		if _, s := h.pl.SignPod(ctx, pod); !s.IsSuccess() {
			b.Fatalf("SignPod: %v", s)
		}
	}
}

package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	basemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/internal/placement/metrics"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/placement"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// answers resolves from a fixed table; images not in it fail.
type answers map[string]platform.Set

func (a answers) Resolve(_ context.Context, req resolver.Request) resolver.Result {
	set, ok := a[req.Image]
	if !ok {
		return resolver.Result{Err: errors.New("manifest unknown")}
	}
	return resolver.Result{Platforms: set}
}

func mustList(t *testing.T, list string) platform.Set {
	t.Helper()
	set, err := platform.ParseList(list)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

type noCredentials struct{}

func (noCredentials) ForPod(*v1.Pod) resolver.Credentials { return nil }

func TestSyncOutcomes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const maxGated = time.Minute
	for _, tc := range []struct {
		name         string
		policy       config.FailurePolicy
		fallback     []string
		age          time.Duration
		image        string
		images       []string // more containers' images
		annotations  map[string]string
		nodeSelector map[string]string
		wantGated    bool
		wantArch     string // a value the written affinity must name; "" for no affinity
		wantReason   string
		wantFailOpen string // fail_open_total's reason label that must grow; "" for none
		wantRecord   string // the outcome recorded in archfilter.io/decision
		wantSource   decision.Source
	}{
		{name: "resolved", policy: config.FailurePolicyIgnore, image: "arm", wantArch: "arm64", wantReason: ReasonPlaced, wantRecord: decision.OutcomeConstrained, wantSource: decision.SourceImages},
		{name: "32-bit image also runs on the 64-bit host", policy: config.FailurePolicyIgnore, image: "armv7", wantArch: "arm64", wantReason: ReasonPlaced, wantRecord: decision.OutcomeConstrained},
		{name: "Ignore: failure releases at once", policy: config.FailurePolicyIgnore, image: "missing", wantReason: ReasonFailedOpen, wantFailOpen: "resolve_failed", wantRecord: decision.OutcomeFailedOpen},
		{name: "Ignore with fallbackPlatforms", policy: config.FailurePolicyIgnore, fallback: []string{"linux/amd64"}, image: "missing", wantArch: "amd64", wantReason: ReasonFailedOpen, wantRecord: decision.OutcomeFailedOpen},
		{
			name: "declared platforms: no registry asked, the annotation decides", policy: config.FailurePolicyFail, image: "missing",
			annotations: map[string]string{annotations.Platforms: "linux/s390x"}, wantArch: "s390x", wantReason: ReasonPlaced, wantRecord: decision.OutcomeConstrained, wantSource: decision.SourceAnnotation,
		},
		{
			name: "invalid declared platforms: rejected, as the plugin rejects it", policy: config.FailurePolicyIgnore, image: "arm",
			annotations: map[string]string{annotations.Platforms: "linux/"}, wantArch: string(v1.NodeSelectorOpDoesNotExist), wantReason: ReasonRejected, wantRecord: decision.OutcomeRejected,
		},
		{name: "no common platform: rejected", policy: config.FailurePolicyIgnore, image: "arm", images: []string{"amd"}, wantArch: string(v1.NodeSelectorOpDoesNotExist), wantReason: ReasonRejected, wantRecord: decision.OutcomeRejected},
		{
			name: "skip annotation added while gated: released as it is", policy: config.FailurePolicyIgnore, image: "arm",
			annotations: map[string]string{annotations.Skip: "true"}, wantReason: ReasonPlaced, wantRecord: decision.OutcomeSkipped,
		},
		{
			name: "preferred-platforms annotation is written as preferred terms", policy: config.FailurePolicyIgnore, image: "multi",
			annotations: map[string]string{annotations.PreferredPlatforms: "linux/s390x=50"}, wantArch: "s390x", wantReason: ReasonPlaced, wantRecord: decision.OutcomeConstrained,
		},
		// containerd runs arm/v5-v8 images on arm64 hosts (github.com/containerd/platforms,
		// compare.go); under run32BitImagesOn the fallback is widened as the plugin widens
		// it (platform.Compat.ParseList), so an arm/v7 fallback admits arm64 nodes.
		{name: "fallbackPlatforms widened by the 32-bit rule", policy: config.FailurePolicyIgnore, fallback: []string{"linux/arm/v7"}, image: "missing", wantArch: "arm64", wantReason: ReasonFailedOpen, wantRecord: decision.OutcomeFailedOpen},
		{name: "Fail: stays gated before max-gated", policy: config.FailurePolicyFail, image: "missing", age: maxGated / 2, wantGated: true},
		{name: "Fail: released after max-gated", policy: config.FailurePolicyFail, image: "missing", age: maxGated + time.Second, wantReason: ReasonFailedOpen, wantFailOpen: "max_gated", wantRecord: decision.OutcomeFailedOpen},
		{name: "own constraints conflict: rejected", policy: config.FailurePolicyIgnore, image: "arm", nodeSelector: map[string]string{v1.LabelArchStable: "amd64"}, wantArch: string(v1.NodeSelectorOpDoesNotExist), wantReason: ReasonRejected, wantRecord: decision.OutcomeRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", CreationTimestamp: metav1.NewTime(now.Add(-tc.age)), Annotations: tc.annotations},
				Spec: v1.PodSpec{
					Containers:      []v1.Container{{Name: "c", Image: tc.image}},
					NodeSelector:    tc.nodeSelector,
					SchedulingGates: []v1.PodSchedulingGate{{Name: placement.GateName}},
				},
			}
			for i, img := range tc.images {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprint("c", i), Image: img})
			}
			client := fake.NewClientset(pod)
			factory := informers.NewSharedInformerFactory(client, 0)
			windows := NewWindowsNodesFactory(client)
			recorder := record.NewFakeRecorder(10)
			c, err := New(Options{
				Client: client, Informers: factory, WindowsNodes: windows.Core().V1().Nodes(), Recorder: recorder, Credentials: noCredentials{},
				Resolver: answers{"arm": mustList(t, "linux/arm64"), "armv7": mustList(t, "linux/arm/v7"), "amd": mustList(t, "linux/amd64"), "multi": mustList(t, "linux/amd64,linux/s390x")},
				Settings: settings(t, &config.ArchFilterArgs{
					FailurePolicy: tc.policy, FallbackPlatforms: tc.fallback,
					MaxWait: metav1.Duration{Duration: time.Second}, Run32BitImagesOn: []string{"arm64"},
				}),
				By:       "test",
				MaxGated: maxGated,
				Now:      func() time.Time { return now },
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []informers.SharedInformerFactory{factory, windows} {
				f.Start(ctx.Done())
				f.WaitForCacheSync(ctx.Done())
			}
			written := counter(t, metrics.AffinityWritten)
			failOpen := counter(t, metrics.FailOpen.WithLabelValues(cmpOr(tc.wantFailOpen, "resolve_failed")))
			retry, err := c.sync(ctx, "ns/p")
			if err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if placement.HasGate(got) != tc.wantGated {
				t.Fatalf("gated = %v, want %v", placement.HasGate(got), tc.wantGated)
			}
			if tc.wantGated {
				if retry <= 0 || now.Add(retry).After(pod.CreationTimestamp.Add(maxGated)) {
					t.Errorf("retry in %v, want a retry before max-gated", retry)
				}
				return
			}
			// A rejected pod's affinity (no node matches it) is not counted as written.
			if grew := counter(t, metrics.AffinityWritten) - written; (tc.wantArch != "" && tc.wantRecord != decision.OutcomeRejected) != (grew == 1) {
				t.Errorf("affinity_written_total grew by %v", grew)
			}
			if grew := counter(t, metrics.FailOpen.WithLabelValues(cmpOr(tc.wantFailOpen, "resolve_failed"))) - failOpen; (tc.wantFailOpen != "") != (grew == 1) {
				t.Errorf("fail_open_total{reason=%q} grew by %v", tc.wantFailOpen, grew)
			}
			rec, ok, err := decision.RecordOf(got)
			if !ok || err != nil {
				t.Fatalf("no decision recorded (%v): %v", err, got.Annotations)
			}
			if rec.Outcome != tc.wantRecord || rec.By != "test" || !rec.At.Time.Equal(now) || (tc.wantSource != "" && rec.Source != tc.wantSource) {
				t.Errorf("recorded %+v, want outcome %s, source %q, by test at %v", rec, tc.wantRecord, tc.wantSource, now)
			}
			if tc.wantArch == "" && got.Spec.Affinity != nil {
				t.Errorf("affinity written: %v", got.Spec.Affinity)
			}
			if tc.wantArch != "" && !strings.Contains(got.Spec.Affinity.String(), tc.wantArch) {
				t.Errorf("affinity %v does not name %s", got.Spec.Affinity, tc.wantArch)
			}
			select {
			case e := <-recorder.Events:
				if !strings.Contains(e, tc.wantReason) {
					t.Errorf("event %q, want reason %s", e, tc.wantReason)
				}
			default:
				t.Errorf("no event, want %s", tc.wantReason)
			}
		})
	}
}

func settings(t *testing.T, args *config.ArchFilterArgs) *decision.Settings {
	t.Helper()
	s, err := decision.NewSettings(args)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func counter(t *testing.T, c basemetrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestWindowsBuilds: the windows-build expression lists every host build that runs the
// image by Microsoft's version-compatibility rules as containerd applies them
// (github.com/containerd/platforms, platform_windows_compat.go: below 20348 the exact build,
// from 20348 on every host build from the image's up), among the known builds and those of
// the cluster's Windows nodes.
func TestWindowsBuilds(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	windowsNode := func(name, build string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1.LabelOSStable: "windows", v1.LabelArchStable: "amd64", v1.LabelWindowsBuild: build,
		}}}
	}
	linuxNode := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "l1", Labels: map[string]string{
		v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64", v1.LabelWindowsBuild: "10.0.29000",
	}}}
	ltsc2019 := platform.NewSet(platform.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.5830"})
	ltsc2022 := platform.NewSet(platform.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.2461"})
	known2022 := []string{"10.0.20348", "10.0.22000", "10.0.22621", "10.0.22631", "10.0.25398", "10.0.26100", "10.0.26200"}
	for _, tc := range []struct {
		name  string
		image platform.Set
		nodes []runtime.Object
		want  []string
	}{
		{name: "2022 image, no Windows node: the known builds from 20348 on", image: ltsc2022, want: known2022},
		{
			name:  "2022 image, a Windows node newer than the known builds: added",
			image: ltsc2022,
			nodes: []runtime.Object{windowsNode("w1", "10.0.28000"), windowsNode("w2", "10.0.20348")},
			want:  append(slices.Clone(known2022), "10.0.28000"),
		},
		{
			name:  "2022 image, an older Windows node and a Linux node: not added",
			image: ltsc2022,
			nodes: []runtime.Object{windowsNode("w1", "10.0.17763"), linuxNode},
			want:  known2022,
		},
		{
			name:  "2019 image: its exact build only, whatever the nodes",
			image: ltsc2019,
			nodes: []runtime.Object{windowsNode("w1", "10.0.26100"), windowsNode("w2", "10.0.17763")},
			want:  []string{"10.0.17763"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", CreationTimestamp: metav1.NewTime(now)},
				Spec: v1.PodSpec{
					Containers:      []v1.Container{{Name: "c", Image: "win"}},
					SchedulingGates: []v1.PodSchedulingGate{{Name: placement.GateName}},
				},
			}
			client := fake.NewClientset(append([]runtime.Object{pod}, tc.nodes...)...)
			factory := informers.NewSharedInformerFactory(client, 0)
			windows := NewWindowsNodesFactory(client)
			c, err := New(Options{
				Client: client, Informers: factory, WindowsNodes: windows.Core().V1().Nodes(), Credentials: noCredentials{},
				Resolver: answers{"win": tc.image},
				Settings: settings(t, &config.ArchFilterArgs{FailurePolicy: config.FailurePolicyIgnore, MaxWait: metav1.Duration{Duration: time.Second}}),
				MaxGated: time.Minute,
				Now:      func() time.Time { return now },
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []informers.SharedInformerFactory{factory, windows} {
				f.Start(ctx.Done())
				f.WaitForCacheSync(ctx.Done())
			}
			if _, err := c.sync(ctx, "ns/p"); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.Affinity == nil || got.Spec.Affinity.NodeAffinity == nil || got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
				t.Fatalf("no required node affinity written: %v", got.Spec.Affinity)
			}
			var builds []string
			for _, term := range got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				for _, e := range term.MatchExpressions {
					if e.Key == v1.LabelWindowsBuild {
						builds = append(builds, e.Values...)
					}
				}
			}
			if diff := cmp.Diff(tc.want, builds); diff != "" {
				t.Errorf("%s values (-want,+got):\n%s", v1.LabelWindowsBuild, diff)
			}
		})
	}
}

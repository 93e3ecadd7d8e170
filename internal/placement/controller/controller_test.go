package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	basemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/internal/placement/metrics"
	"github.com/archfilter/archfilter/pkg/placement"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// answers resolves from a fixed table; images not in it fail.
type answers map[string]string

func (a answers) Resolve(_ context.Context, req resolver.Request) resolver.Result {
	list, ok := a[req.Image]
	if !ok {
		return resolver.Result{Err: errors.New("manifest unknown")}
	}
	set, err := platform.ParseList(list)
	return resolver.Result{Platforms: set, Err: err}
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
		nodeSelector map[string]string
		wantGated    bool
		wantArch     string // a value the written affinity must name; "" for no affinity
		wantReason   string
		wantFailOpen string // fail_open_total's reason label that must grow; "" for none
	}{
		{name: "resolved", policy: config.FailurePolicyIgnore, image: "arm", wantArch: "arm64", wantReason: ReasonPlaced},
		{name: "32-bit image also runs on the 64-bit host", policy: config.FailurePolicyIgnore, image: "armv7", wantArch: "arm64", wantReason: ReasonPlaced},
		{name: "Ignore: failure releases at once", policy: config.FailurePolicyIgnore, image: "missing", wantReason: ReasonFailedOpen, wantFailOpen: "resolve_failed"},
		{name: "Ignore with fallbackPlatforms", policy: config.FailurePolicyIgnore, fallback: []string{"linux/amd64"}, image: "missing", wantArch: "amd64", wantReason: ReasonPlaced},
		{name: "Fail: stays gated before max-gated", policy: config.FailurePolicyFail, image: "missing", age: maxGated / 2, wantGated: true},
		{name: "Fail: released after max-gated", policy: config.FailurePolicyFail, image: "missing", age: maxGated + time.Second, wantReason: ReasonFailedOpen, wantFailOpen: "max_gated"},
		{name: "conflict", policy: config.FailurePolicyIgnore, image: "arm", nodeSelector: map[string]string{v1.LabelArchStable: "amd64"}, wantReason: ReasonConflict, wantFailOpen: "conflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", CreationTimestamp: metav1.NewTime(now.Add(-tc.age))},
				Spec: v1.PodSpec{
					Containers:      []v1.Container{{Name: "c", Image: tc.image}},
					NodeSelector:    tc.nodeSelector,
					SchedulingGates: []v1.PodSchedulingGate{{Name: placement.GateName}},
				},
			}
			client := fake.NewClientset(pod)
			factory := informers.NewSharedInformerFactory(client, 0)
			recorder := record.NewFakeRecorder(10)
			c, err := New(Options{
				Client: client, Informers: factory, Recorder: recorder, Credentials: noCredentials{},
				Resolver: answers{"arm": "linux/arm64", "armv7": "linux/arm/v7"},
				Args: &config.ArchFilterArgs{
					FailurePolicy: tc.policy, FallbackPlatforms: tc.fallback,
					MaxWait: metav1.Duration{Duration: time.Second}, Run32BitImagesOn: []string{"arm64"},
				},
				MaxGated: maxGated,
				Now:      func() time.Time { return now },
			})
			if err != nil {
				t.Fatal(err)
			}
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())
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
			if grew := counter(t, metrics.AffinityWritten) - written; (tc.wantArch != "") != (grew == 1) {
				t.Errorf("affinity_written_total grew by %v", grew)
			}
			if grew := counter(t, metrics.FailOpen.WithLabelValues(cmpOr(tc.wantFailOpen, "resolve_failed"))) - failOpen; (tc.wantFailOpen != "") != (grew == 1) {
				t.Errorf("fail_open_total{reason=%q} grew by %v", tc.wantFailOpen, grew)
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

package archfilter

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// Images the standard fake registry does not know yet.
const (
	imgNewInit    = "registry.example.com/new/init:1"
	imgNewSidecar = "registry.example.com/new/sidecar:1"
	imgNewMain    = "registry.example.com/new/main:1"
	imgNewVolume  = "registry.example.com/new/models:1"
	imgNewDebug   = "registry.example.com/new/debug:1"
	imgNewAgent   = "registry.example.com/new/agent:1"
)

func waiting() statusResult {
	return want(fwk.UnschedulableAndUnresolvable, ReasonWaiting)
}

func namespace(name string, labels map[string]string) *v1.Namespace {
	return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestPreEnqueueScope(t *testing.T) {
	daemonSet := appsv1.SchemeGroupVersion.WithKind("DaemonSet")
	selectEnabled := func(a *config.ArchFilterArgs) {
		a.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"archfilter.io/enabled": "true"}}
	}
	namespaces := []runtime.Object{
		namespace("selected", map[string]string{"archfilter.io/enabled": "true"}),
		namespace("other", nil),
	}
	tests := []struct {
		name    string
		args    func(*config.ArchFilterArgs)
		objects []runtime.Object
		pod     *v1.Pod
		want    statusResult
		// wantAsync are the images whose resolution started; nil with
		// wantNoLookup means the resolver was not consulted at all.
		wantAsync    []string
		wantNoLookup bool
	}{
		{
			name:         "skip annotation",
			pod:          makePod("p", imgNewMain).Annotation(annotations.Skip, "true").Obj(),
			want:         success,
			wantNoLookup: true,
		},
		{
			name:         "skip annotation True (strconv.ParseBool's spellings)",
			pod:          makePod("p", imgNewMain).Annotation(annotations.Skip, "True").Obj(),
			want:         success,
			wantNoLookup: true,
		},
		{
			name:      "skip annotation false",
			pod:       makePod("p", imgNewMain).Annotation(annotations.Skip, "false").Obj(),
			want:      waiting(),
			wantAsync: []string{imgNewMain},
		},
		{
			name:         "excluded namespace (default kube-system)",
			pod:          makePod("p", imgNewMain).Namespace("kube-system").Obj(),
			want:         success,
			wantNoLookup: true,
		},
		{
			name:      "explicitly empty excludedNamespaces excludes nothing",
			args:      func(a *config.ArchFilterArgs) { a.ExcludedNamespaces = []string{} },
			pod:       makePod("p", imgNewMain).Namespace("kube-system").Obj(),
			want:      waiting(),
			wantAsync: []string{imgNewMain},
		},
		{
			name:         "DaemonSet pod under daemonSetPolicy Skip",
			pod:          makePod("p", imgNewAgent).OwnerReference("ds", daemonSet).Obj(),
			want:         success,
			wantNoLookup: true,
		},
		{
			name:      "DaemonSet pod under daemonSetPolicy Enforce",
			args:      func(a *config.ArchFilterArgs) { a.DaemonSetPolicy = config.DaemonSetPolicyEnforce },
			pod:       makePod("p", imgNewAgent).OwnerReference("ds", daemonSet).Obj(),
			want:      waiting(),
			wantAsync: []string{imgNewAgent},
		},
		{
			name:      "pod owned by a ReplicaSet under daemonSetPolicy Skip",
			pod:       makePod("p", imgNewAgent).OwnerReference("rs", appsv1.SchemeGroupVersion.WithKind("ReplicaSet")).Obj(),
			want:      waiting(),
			wantAsync: []string{imgNewAgent},
		},
		{
			name:         "declared platforms annotation",
			pod:          makePod("p", imgNewMain).Annotation(annotations.Platforms, "linux/arm64").Obj(),
			want:         success,
			wantNoLookup: true,
		},
		{
			name:         "invalid declared annotation is left to PreFilter",
			pod:          makePod("p", imgNewMain).Annotation(annotations.Platforms, "arm64").Obj(),
			want:         success,
			wantNoLookup: true,
		},
		{
			name:      "namespaceSelector selects the pod's namespace",
			args:      selectEnabled,
			objects:   namespaces,
			pod:       makePod("p", imgNewMain).Namespace("selected").Obj(),
			want:      waiting(),
			wantAsync: []string{imgNewMain},
		},
		{
			name:         "namespaceSelector does not select the pod's namespace",
			args:         selectEnabled,
			objects:      namespaces,
			pod:          makePod("p", imgNewMain).Namespace("other").Obj(),
			want:         success,
			wantNoLookup: true,
		},
		{
			name:         "namespaceSelector and a namespace the informer does not know",
			args:         selectEnabled,
			objects:      namespaces,
			pod:          makePod("p", imgNewMain).Namespace("unknown").Obj(),
			want:         success,
			wantNoLookup: true,
		},
		{
			name:      "empty namespaceSelector selects every namespace",
			args:      func(a *config.ArchFilterArgs) { a.NamespaceSelector = &metav1.LabelSelector{} },
			objects:   namespaces,
			pod:       makePod("p", imgNewMain).Namespace("other").Obj(),
			want:      waiting(),
			wantAsync: []string{imgNewMain},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			args := defaultArgs(t)
			if tc.args != nil {
				tc.args(args)
			}
			h := newHarness(t, ctx, harnessConfig{args: args, objects: tc.objects})
			if h.pl.scope.namespaces != nil {
				h.poll(ctx, "namespaces in the informer", func() bool {
					_, err := h.pl.scope.namespaces.Get("other")
					return err == nil
				})
			}
			got := h.preEnqueue(ctx, tc.pod)
			if diff := cmp.Diff(tc.want, statusOf(got)); diff != "" {
				t.Errorf("PreEnqueue status (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAsync, h.res.asyncCalls()); diff != "" {
				t.Errorf("ResolveAsync calls (-want,+got):\n%s", diff)
			}
			if n := h.res.lookupCount(); tc.wantNoLookup && n != 0 {
				t.Errorf("Lookup called %d times for a pod ArchFilter does not resolve", n)
			}
		})
	}
}

func TestPreEnqueueAllCached(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
	}{
		{name: "one multi-arch image", pod: makePod("p", imgMulti).Obj()},
		{name: "several images", pod: makePod("p", imgMulti, imgARM64, imgData).Obj()},
		{name: "a cached failure counts as known", pod: makePod("p", imgMulti, imgFailed).Obj()},
		{name: "no containers", pod: makePod("p").Obj()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			h := newHarness(t, ctx, harnessConfig{})
			if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, tc.pod))); diff != "" {
				t.Errorf("PreEnqueue status (-want,+got):\n%s", diff)
			}
			if got := h.res.asyncCalls(); len(got) != 0 {
				t.Errorf("ResolveAsync called for cached images: %v", got)
			}
			if got := h.pl.held.heldCount(); got != 0 {
				t.Errorf("heldCount = %d, want 0", got)
			}
		})
	}
}

// podWithEveryKindOfImage has an init container, a sidecar, two containers
// sharing an image, an image volume, and an ephemeral container.
func podWithEveryKindOfImage() *v1.Pod {
	pod := makePod("p", imgMulti, imgNewMain, imgNewMain).Obj()
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{
		{Name: "init", Image: imgNewInit},
		{Name: "sidecar", Image: imgNewSidecar, RestartPolicy: &always},
	}
	pod.Spec.Volumes = []v1.Volume{
		{Name: "models", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: imgNewVolume}}},
		{Name: "empty-ref", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: imgNewDebug}},
	}
	return pod
}

func TestPreEnqueueHoldsUntilResolved(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	// The resolved event explains the cluster's node platforms the pod cannot use.
	h.poll(ctx, "the platform table to hold every node", func() bool {
		return len(h.pl.platforms.snapshot().ids) == len(h.nodes)
	})
	pod := podWithEveryKindOfImage()
	key := "default/p"

	if diff := cmp.Diff(waiting(), statusOf(h.preEnqueue(ctx, pod))); diff != "" {
		t.Fatalf("first PreEnqueue (-want,+got):\n%s", diff)
	}
	wantAsync := []string{imgNewInit, imgNewSidecar, imgNewMain, imgNewVolume}
	if diff := cmp.Diff(wantAsync, h.res.asyncCalls()); diff != "" {
		t.Errorf("ResolveAsync calls: only the missing images, once each, ephemeral ignored (-want,+got):\n%s", diff)
	}
	if got := h.pl.held.heldCount(); got != 1 {
		t.Errorf("heldCount = %d, want 1", got)
	}

	// A second PreEnqueue while in flight (e.g. a pod update) starts nothing new.
	if diff := cmp.Diff(waiting(), statusOf(h.preEnqueue(ctx, pod))); diff != "" {
		t.Errorf("second PreEnqueue (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(wantAsync, h.res.asyncCalls()); diff != "" {
		t.Errorf("ResolveAsync calls after the second PreEnqueue (-want,+got):\n%s", diff)
	}

	answers := map[string]resolver.Result{
		imgNewInit:    {Platforms: mustSet(t, "linux/amd64,linux/arm64,linux/s390x")},
		imgNewSidecar: {Platforms: mustSet(t, "linux/amd64,linux/arm64")},
		imgNewMain:    {Platforms: mustSet(t, "linux/arm64")},
		imgNewVolume:  {Platforms: mustSet(t, "linux/arm64,linux/amd64")},
	}
	for i, img := range wantAsync {
		if n := h.res.complete(img, answers[img]); n != 1 {
			t.Fatalf("completing %s called %d callbacks, want 1", img, n)
		}
		wantActivations := 0
		if i == len(wantAsync)-1 {
			wantActivations = 1
		}
		if got := h.act.activations(key); got != wantActivations {
			t.Errorf("after completing %d of %d images: %d activations of %s, want %d", i+1, len(wantAsync), got, key, wantActivations)
		}
	}
	if diff := cmp.Diff([]string{key}, h.act.keys()); diff != "" {
		t.Errorf("activated keys (-want,+got):\n%s", diff)
	}
	// The first image (in spec order) that does not run on each other platform is named.
	wantEvents := []string{"Normal " + EventResolved + " Images of the pod run on linux/arm64; on the cluster's other nodes: " +
		`container "con1" (` + imgNewMain + `) does not run on linux/amd64; ` +
		`sidecar "sidecar" (` + imgNewSidecar + `) does not run on linux/s390x; ` +
		`init container "init" (` + imgNewInit + `) does not run on windows/amd64 build 10.0.17763`}
	if diff := cmp.Diff(wantEvents, withReason(h.events(), EventResolved)); diff != "" {
		t.Errorf("resolved events (-want,+got):\n%s", diff)
	}

	if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, pod))); diff != "" {
		t.Errorf("PreEnqueue after resolution (-want,+got):\n%s", diff)
	}
	if got := h.pl.held.heldCount(); got != 0 {
		t.Errorf("heldCount after admission = %d, want 0", got)
	}
	// The admitted pod's timers are stopped: maxWait passing does nothing.
	h.clock.Step(h.pl.settings.MaxWait)
	if got := h.act.activations(key); got != 1 {
		t.Errorf("%d activations after maxWait passed for an admitted pod, want 1", got)
	}
	if got := withReason(h.events(), EventResolving); len(got) != 0 {
		t.Errorf("slow events for a resolved pod: %v", got)
	}
}

// TestPreEnqueueFetchesGatedPodsImages: a pod behind another scheduling gate
// (ArchFilter runs before SchedulingGates in the shipped configurations) is
// admitted to the next PreEnqueue plugin, which turns it away, and its images
// are fetched meanwhile: nothing is held, and once the gate is removed the pod
// passes at once.
func TestPreEnqueueFetchesGatedPodsImages(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	gated := makePod("gated", imgNewMain).SchedulingGates([]string{"example.com/quota"}).Obj()
	if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, gated))); diff != "" {
		t.Errorf("PreEnqueue of a gated pod (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{imgNewMain}, h.res.asyncCalls()); diff != "" {
		t.Errorf("fetches started for the gated pod (-want,+got):\n%s", diff)
	}
	if got := h.pl.held.heldCount(); got != 0 {
		t.Errorf("heldCount = %d, want 0: a gated pod is not held", got)
	}
	h.res.complete(imgNewMain, resolver.Result{Platforms: mustSet(t, "linux/arm64")})
	if n := h.act.activations("default/gated"); n != 0 {
		t.Errorf("the gated pod was activated %d times; its gate's removal requeues it", n)
	}
	ungated := gated.DeepCopy()
	ungated.Spec.SchedulingGates = nil
	if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, ungated))); diff != "" {
		t.Errorf("PreEnqueue once the gate is removed (-want,+got):\n%s", diff)
	}
	if got := h.res.asyncCalls(); len(got) != 1 {
		t.Errorf("fetches after the gate's removal: %v, want none new", got)
	}
}

// TestPreEnqueueFastWorker: a worker may answer before PreEnqueue has
// dispatched the pod's other images (a cache hit, or a fetch another pod
// already started). The pod must not be activated, nor announced as
// resolved, while one of its images is still unknown.
func TestPreEnqueueFastWorker(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	h.res.completeWithin = map[string]resolver.Result{
		imgNewInit: {Platforms: mustSet(t, "linux/amd64,linux/arm64")},
	}
	pod := makePod("p", imgNewMain).Obj()
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: imgNewInit}}
	key := "default/p"

	if diff := cmp.Diff(waiting(), statusOf(h.preEnqueue(ctx, pod))); diff != "" {
		t.Fatalf("PreEnqueue (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{imgNewMain}, h.res.pendingImages()); diff != "" {
		t.Fatalf("pending resolutions (-want,+got):\n%s", diff)
	}
	if got := h.act.activations(key); got != 0 {
		t.Errorf("pod activated %d times while %s is still resolving, want 0", got, imgNewMain)
	}
	if got := withReason(h.events(), EventResolved); len(got) != 0 {
		t.Errorf("pod announced as resolved while %s is still resolving: %v", imgNewMain, got)
	}

	h.res.complete(imgNewMain, resolver.Result{Platforms: mustSet(t, "linux/arm64")})
	if got := h.act.activations(key); got != 1 {
		t.Errorf("pod activated %d times once every image resolved, want 1", got)
	}
	if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, pod))); diff != "" {
		t.Errorf("PreEnqueue after resolution (-want,+got):\n%s", diff)
	}
}

func TestPreEnqueueMaxWait(t *testing.T) {
	for _, policy := range []config.FailurePolicy{config.FailurePolicyIgnore, config.FailurePolicyFail} {
		t.Run(string(policy), func(t *testing.T) {
			ctx := testContext(t)
			args := defaultArgs(t)
			args.FailurePolicy = policy
			h := newHarness(t, ctx, harnessConfig{args: args})
			pod := makePod("p", imgNewMain).Obj()
			key := "default/p"
			maxWait := args.MaxWait.Duration

			if diff := cmp.Diff(waiting(), statusOf(h.preEnqueue(ctx, pod))); diff != "" {
				t.Fatalf("PreEnqueue (-want,+got):\n%s", diff)
			}
			h.clock.Step(maxWait - time.Millisecond)
			if got := h.act.activations(key); got != 0 {
				t.Fatalf("activated %d times before maxWait", got)
			}
			h.clock.Step(time.Millisecond)
			if got := h.act.activations(key); got != 1 {
				t.Fatalf("activated %d times when maxWait passed, want 1", got)
			}
			// Still held (and still resolving) until PreEnqueue runs again.
			if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, pod))); diff != "" {
				t.Errorf("PreEnqueue after maxWait (-want,+got):\n%s", diff)
			}
			if got := h.pl.held.heldCount(); got != 0 {
				t.Errorf("heldCount after admission = %d, want 0", got)
			}
			if got := h.res.asyncCalls(); len(got) != 1 {
				t.Errorf("ResolveAsync calls = %v, want only the first one", got)
			}
		})
	}
}

func TestPreEnqueueSlowEvent(t *testing.T) {
	tests := []struct {
		name     string
		maxWait  time.Duration
		wantSlow time.Duration
	}{
		{name: "default maxWait", maxWait: 30 * time.Second, wantSlow: slowWait},
		{name: "short maxWait: half of it", maxWait: 4 * time.Second, wantSlow: 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			args := defaultArgs(t)
			args.MaxWait.Duration = tc.maxWait
			h := newHarness(t, ctx, harnessConfig{args: args})
			pod := makePod("p", imgNewMain, imgNewSidecar).Obj()
			h.preEnqueue(ctx, pod)

			h.clock.Step(tc.wantSlow - time.Millisecond)
			if got := withReason(h.events(), EventResolving); len(got) != 0 {
				t.Fatalf("slow event before %v: %v", tc.wantSlow, got)
			}
			h.clock.Step(time.Millisecond)
			want := []string{"Normal " + EventResolving + " Waiting for registries to report the platforms of " +
				strings.Join(sorted(imgNewMain, imgNewSidecar), ", ")}
			if diff := cmp.Diff(want, withReason(h.events(), EventResolving)); diff != "" {
				t.Errorf("slow event (-want,+got):\n%s", diff)
			}
		})
	}

	t.Run("no slow event once resolved; data-only images announced as unconstrained", func(t *testing.T) {
		ctx := testContext(t)
		h := newHarness(t, ctx, harnessConfig{})
		pod := makePod("p", imgNewMain).Obj()
		h.preEnqueue(ctx, pod)
		h.res.complete(imgNewMain, resolver.Result{Platforms: platform.Any()})
		h.clock.Step(slowWait)
		evs := h.events()
		if got := withReason(evs, EventResolving); len(got) != 0 {
			t.Errorf("slow event for a pod whose images resolved: %v", got)
		}
		want := []string{"Normal " + EventResolved + " Images of " + imgNewMain + " run on any platform"}
		if diff := cmp.Diff(want, withReason(evs, EventResolved)); diff != "" {
			t.Errorf("resolved event (-want,+got):\n%s", diff)
		}
	})
}

func sorted(s ...string) []string {
	if s == nil {
		return nil
	}
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

func TestPreEnqueuePodDeletedWhileHeld(t *testing.T) {
	ctx := testContext(t)
	pod := makePod("p", imgNewMain).Obj()
	h := newHarness(t, ctx, harnessConfig{objects: []runtime.Object{pod.DeepCopy()}})
	h.poll(ctx, "pod in the informer", func() bool {
		_, err := h.factory.Core().V1().Pods().Lister().Pods("default").Get("p")
		return err == nil
	})
	h.preEnqueue(ctx, pod)
	if got := h.pl.held.heldCount(); got != 1 {
		t.Fatalf("heldCount = %d, want 1", got)
	}
	if err := h.client.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod: %v", err)
	}
	h.poll(ctx, "held state of the deleted pod to be forgotten", func() bool { return h.pl.held.heldCount() == 0 })
	h.clock.Step(h.pl.settings.MaxWait)
	if got := h.act.activations("default/p"); got != 0 {
		t.Errorf("deleted pod activated %d times by its maxWait timer, want 0", got)
	}
	if got := withReason(h.events(), EventResolving); len(got) != 0 {
		t.Errorf("slow event for a deleted pod: %v", got)
	}
}

// TestPreEnqueueForgetsPodThatLeftScope: a held pod that opts out (skip
// annotation, declared platforms) is admitted; its held state and timers
// must go too.
func TestPreEnqueueForgetsPodThatLeftScope(t *testing.T) {
	tests := []struct {
		name      string
		annotate  string
		value     string
		wantAdmit statusResult
	}{
		{name: "skip annotation added", annotate: annotations.Skip, value: "true", wantAdmit: success},
		{name: "platforms declared", annotate: annotations.Platforms, value: "linux/amd64", wantAdmit: success},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			h := newHarness(t, ctx, harnessConfig{})
			pod := makePod("p", imgNewMain).Obj()
			h.preEnqueue(ctx, pod)

			updated := pod.DeepCopy()
			metav1.SetMetaDataAnnotation(&updated.ObjectMeta, tc.annotate, tc.value)
			if diff := cmp.Diff(tc.wantAdmit, statusOf(h.preEnqueue(ctx, updated))); diff != "" {
				t.Fatalf("PreEnqueue (-want,+got):\n%s", diff)
			}
			if got := h.pl.held.heldCount(); got != 0 {
				t.Errorf("heldCount = %d after the pod was admitted, want 0 (held state leaks until the pod is deleted)", got)
			}
			h.clock.Step(h.pl.settings.MaxWait)
			if got := h.act.activations("default/p"); got != 0 {
				t.Errorf("admitted pod activated %d times by its stale maxWait timer, want 0", got)
			}
		})
	}
}

func TestPreEnqueueResolutionFailureAnnounced(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	pod := makePod("p", imgNewMain).Obj()
	h.preEnqueue(ctx, pod)
	failure := &resolver.Error{Image: imgNewMain, Registry: "registry.example.com", CredentialSource: "anonymous", StatusCode: 404, Reason: resolver.ReasonNotFound}
	h.res.complete(imgNewMain, resolver.Result{Err: failure, Expires: h.clock.Now().Add(time.Minute)})
	if got := h.act.activations("default/p"); got != 1 {
		t.Errorf("activations = %d, want 1", got)
	}
	want := []string{"Warning " + EventResolutionFailed + " " + failure.Error()}
	if diff := cmp.Diff(want, withReason(h.events(), EventResolutionFailed)); diff != "" {
		t.Errorf("failure events (-want,+got):\n%s", diff)
	}
	// The failure is a cached answer: PreEnqueue admits, PreFilter applies the policy.
	if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, pod))); diff != "" {
		t.Errorf("PreEnqueue after a failed resolution (-want,+got):\n%s", diff)
	}
}

// TestHeldPodsStopWithContext: once the plugin's context is done, no timer or
// callback activates pods (the queue is gone).
func TestHeldPodsStopWithContext(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	pluginCtx, cancel := context.WithCancel(ctx)
	pl, err := newPlugin(pluginCtx, defaultArgs(t), h.handle, deps{resolver: h.res, credentials: h.creds, clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	pod := makePod("p", imgNewMain).Obj()
	pl.PreEnqueue(ctx, pod)
	cancel()
	h.poll(ctx, "held pods to stop", func() bool {
		pl.held.mu.Lock()
		defer pl.held.mu.Unlock()
		return pl.held.stopped
	})
	h.clock.Step(pl.settings.MaxWait)
	h.res.complete(imgNewMain, resolver.Result{Platforms: mustSet(t, "linux/amd64")})
	if got := h.act.keys(); len(got) != 0 {
		t.Errorf("activations after stop: %v", got)
	}
}

// TestPreEnqueueDaemonSetPinnedToWrongPlatform: a DaemonSet pod under
// daemonSetPolicy Skip is admitted at once; when its images cannot run on the
// node it is pinned to, a warning says so.
func TestPreEnqueueDaemonSetPinnedToWrongPlatform(t *testing.T) {
	daemonSet := appsv1.SchemeGroupVersion.WithKind("DaemonSet")
	pinned := func(images ...string) *v1.Pod {
		return makePod("ds-pod", images...).OwnerReference("ds", daemonSet).Obj()
	}
	pin := func(pod *v1.Pod, node string) *v1.Pod {
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}},
		}}}
		return pod
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		// complete answers the pending image, if any.
		complete   map[string]resolver.Result
		wantAsync  []string
		wantWarned bool
	}{
		{name: "cached images run on the node", pod: pin(pinned(imgMulti), nodeARM64)},
		{name: "cached images do not run on the node", pod: pin(pinned(imgAMD64), nodeARM64), wantWarned: true},
		{name: "not pinned", pod: pinned(imgAMD64)},
		{
			name:       "image resolved in the background, does not run on the node",
			pod:        pin(pinned(imgNewAgent), nodeS390X),
			complete:   map[string]resolver.Result{imgNewAgent: {Platforms: mustSet(t, "linux/amd64,linux/arm64")}},
			wantAsync:  []string{imgNewAgent},
			wantWarned: true,
		},
		{
			name:      "image resolved in the background, runs on the node",
			pod:       pin(pinned(imgNewAgent), nodeAMD64),
			complete:  map[string]resolver.Result{imgNewAgent: {Platforms: mustSet(t, "linux/amd64,linux/arm64")}},
			wantAsync: []string{imgNewAgent},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			h := newHarness(t, ctx, harnessConfig{})
			if diff := cmp.Diff(success, statusOf(h.preEnqueue(ctx, tc.pod))); diff != "" {
				t.Fatalf("PreEnqueue (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAsync, h.res.asyncCalls()); diff != "" {
				t.Errorf("ResolveAsync calls (-want,+got):\n%s", diff)
			}
			for img, res := range tc.complete {
				h.res.complete(img, res)
			}
			if got := withReason(h.events(), EventDaemonSetMismatch); (len(got) > 0) != tc.wantWarned {
				t.Errorf("%s events: %v, want warned: %v", EventDaemonSetMismatch, got, tc.wantWarned)
			}
			if got := h.pl.held.heldCount(); got != 0 {
				t.Errorf("heldCount = %d, want 0", got)
			}
			if got := h.act.keys(); len(got) != 0 {
				t.Errorf("DaemonSet pod activated: %v", got)
			}
		})
	}
}

// TestPreEnqueueInvalidSkipAnnotation: a value that is neither true nor false
// does not skip the pod, and a warning event says so, naming the value.
func TestPreEnqueueInvalidSkipAnnotation(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	pod := makePod("p", imgNewMain).Annotation(annotations.Skip, "yes").Obj()
	if got := statusOf(h.preEnqueue(ctx, pod)); got != waiting() {
		t.Errorf("PreEnqueue = %+v, want the pod held like any other", got)
	}
	evs := withReason(h.events(), EventInvalidAnnotation)
	if len(evs) != 1 || !strings.Contains(evs[0], `"yes"`) || !strings.Contains(evs[0], annotations.Skip) {
		t.Errorf("events %s: want one naming the annotation and the value \"yes\"", evs)
	}
	valid := makePod("q", imgNewMain).Annotation(annotations.Skip, "false").Obj()
	h.preEnqueue(ctx, valid)
	if evs := withReason(h.events(), EventInvalidAnnotation); len(evs) != 0 {
		t.Errorf("a valid value raised %s", evs)
	}
}

// TestPreEnqueueLintsAnnotations: each mistake package decision finds in a pod's
// archfilter.io/ annotations is a warning event, in the words check and the
// placement mode's admission warnings use; a declaration that does not parse is left
// to PreFilter's rejection, a preference to PreScore's InvalidPlatformPreference.
func TestPreEnqueueLintsAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name, key, value string
		// want are parts of the one event wanted; none when no event is.
		want []string
	}{
		{name: "misspelt key", key: "archfilter.io/platfroms", value: "linux/arm64", want: []string{"archfilter.io/platfroms is not one archfilter reads", "did you mean archfilter.io/platforms?"}},
		{name: "unknown architecture", key: annotations.Platforms, value: "linux/arm46", want: []string{`no container runtime knows the architecture "arm46"`, "did you mean linux/arm64?"}},
		{name: "syntax error: PreFilter says it", key: annotations.Platforms, value: "linux/amd64,,arm64"},
		{name: "part of a declaration matches no node", key: annotations.Platforms, value: "linux/amd64,linux/arm46", want: []string{"part of it matches no node", "did you mean linux/amd64,linux/arm64?"}},
		{name: "skip: yes", key: annotations.Skip, value: "yes", want: []string{`"yes" is not true or false`, `did you mean "true"?`}},
		{name: "preference: PreScore says it", key: annotations.PreferredPlatforms, value: "amd64=5"},
		{name: "valid", key: annotations.Platforms, value: "linux/arm64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			h := newHarness(t, ctx, harnessConfig{})
			h.preEnqueue(ctx, makePod("p", imgNewMain).Annotation(tc.key, tc.value).Obj())
			evs := withReason(h.events(), EventInvalidAnnotation)
			if len(tc.want) == 0 {
				if len(evs) != 0 {
					t.Errorf("events %s, want none", evs)
				}
				return
			}
			if len(evs) != 1 {
				t.Fatalf("events %s, want one", evs)
			}
			want := decision.LintAnnotations(map[string]string{tc.key: tc.value})[0].Message
			if !strings.Contains(evs[0], want) {
				t.Errorf("event %q does not say what decision.LintAnnotations says: %q", evs[0], want)
			}
			for _, w := range tc.want {
				if !strings.Contains(evs[0], w) {
					t.Errorf("event %q lacks %q", evs[0], w)
				}
			}
		})
	}
}

package heal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/internal/placement/controller"
	"github.com/archfilter/archfilter/internal/placement/metrics"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/misplaced"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

type answers map[string]string

func (a answers) Resolve(_ context.Context, req resolver.Request) resolver.Result {
	list, ok := a[req.Image]
	if !ok {
		return resolver.Result{Err: errors.New("manifest unknown")}
	}
	set, err := platform.ParseList(list)
	if err != nil {
		panic(err)
	}
	return resolver.Result{Platforms: set}
}

// movedDigest is what the tag "moved" pointed to when its pods started: an image
// for both platforms; the tag now points to an amd64-only one.
const movedDigest = "sha256:4444444444444444444444444444444444444444444444444444444444444444"

var fixtureAnswers = answers{"arm": "linux/arm64", "amd": "linux/amd64", "multi": "linux/amd64,linux/arm64",
	"moved": "linux/amd64", "docker.io/library/moved@" + movedDigest: "linux/amd64,linux/arm64"}

type noCredentials struct{}

func (noCredentials) ForPod(*v1.Pod) resolver.Credentials { return nil }

func node(name, arch string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: arch}}}
}

// pod is bound to nodeName with one container of image, owned by a controller of kind
// ownerKind ("" for none).
func pod(name, nodeName, image, ownerKind string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name)},
		Spec:   v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Name: "app", Image: image}}},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
	if ownerKind != "" {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: ownerKind, Name: "owner", Controller: ptr.To(true)}}
	}
	return p
}

type fixture struct {
	h        *Healer
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	recorder *record.FakeRecorder
	// evictions are the pods the Eviction API was asked to evict; refuse makes
	// it answer 429 for those pods, as for a PodDisruptionBudget.
	evictions []string
	refuse    map[string]bool
}

func newFixture(t *testing.T, ctx context.Context, mode Mode, perMinute float64, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	f := &fixture{client: client, recorder: record.NewFakeRecorder(100), refuse: map[string]bool{}}
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		if ev.DeleteOptions == nil || ev.DeleteOptions.Preconditions == nil || ev.DeleteOptions.Preconditions.UID == nil {
			t.Errorf("eviction of %s without a UID precondition", ev.Name)
		}
		if f.refuse[ev.Name] {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		f.evictions = append(f.evictions, ev.Name)
		return true, nil, nil
	})
	args := &config.ArchFilterArgs{FailurePolicy: config.FailurePolicyIgnore, DaemonSetPolicy: config.DaemonSetPolicyEnforce}
	s, err := decision.NewSettings(args)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	f.factory = factory
	f.h, err = New(Options{Client: client, Informers: factory, Resolver: fixtureAnswers,
		Credentials: noCredentials{}, Recorder: f.recorder, Settings: s, Mode: mode, EvictionsPerMinute: perMinute})
	if err != nil {
		t.Fatal(err)
	}
	ictx, cancel := context.WithCancel(ctx)
	factory.Start(ictx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(ctx.Done(), f.h.synced...) {
		t.Fatal("informers did not sync")
	}
	return f
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func gauge(t *testing.T, kind misplaced.Kind) float64 {
	t.Helper()
	v, err := testutil.GetGaugeMetricValue(metrics.MisplacedPods.WithLabelValues(string(kind)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func counter(t *testing.T, result string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.MisplacedEvictions.WithLabelValues(result))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func notEvicted(t *testing.T, reason misplaced.NotEvicted) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.MisplacedNotEvicted.WithLabelValues(string(reason)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestReport(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, ctx, ModeReport, 0,
		node("amd-1", "amd64"), node("arm-1", "arm64"),
		pod("api-1", "amd-1", "arm", "ReplicaSet"), pod("api-2", "arm-1", "arm", "ReplicaSet"), pod("web-1", "amd-1", "multi", "ReplicaSet"),
		pod("gone-1", "amd-1", "missing", "ReplicaSet"))
	// An image that does not resolve: no finding, checked again later.
	if retry, err := f.h.sync(ctx, "shop/gone-1"); err != nil || retry != defaultNegativeTTL {
		t.Errorf("unresolved image: retry %v, err %v; want a retry in %v", retry, err, defaultNegativeTTL)
	}
	for _, key := range []string{"shop/api-1", "shop/api-2", "shop/web-1", "shop/api-1"} {
		if _, err := f.h.sync(ctx, key); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
	// One event for api-1, though it was checked twice; none for the pods that fit.
	want := []string{`Warning ArchFilterMisplaced node amd-1 (linux/amd64) cannot run this pod: node-cannot-run: container "app" (arm) runs on linux/arm64, not on linux/amd64`}
	if diff := cmp.Diff(want, f.events()); diff != "" {
		t.Errorf("events (-want,+got):\n%s", diff)
	}
	if got := gauge(t, misplaced.NodeCannotRun); got != 1 {
		t.Errorf("misplaced_pods{kind=node-cannot-run} = %v, want 1", got)
	}
	if len(f.evictions) != 0 {
		t.Errorf("report mode evicted %v", f.evictions)
	}
	// The pod is gone (from the informer's cache, as after its deletion): the gauge
	// forgets it.
	gone, err := f.h.pods.Pods("shop").Get("api-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.factory.Core().V1().Pods().Informer().GetIndexer().Delete(gone); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.sync(ctx, "shop/api-1"); err != nil {
		t.Fatal(err)
	}
	if got := gauge(t, misplaced.NodeCannotRun); got != 0 {
		t.Errorf("misplaced_pods{kind=node-cannot-run} = %v after the pod's deletion, want 0", got)
	}
}

func TestEvict(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	execFormat := pod("batch-1", "amd-1", "arm", "Job")
	execFormat.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", LastTerminationState: v1.ContainerState{
		Terminated: &v1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128, Message: "exec format error"}}}}
	// Its image claims linux/arm64, yet its binary is not of it: a replacement would
	// be placed on arm64 again and fail again.
	lying := pod("lying-1", "arm-1", "multi", "ReplicaSet")
	lying.Status.ContainerStatuses = execFormat.Status.ContainerStatuses
	f := newFixture(t, ctx, ModeEvict, 1, // one a minute: the second evictable pod waits
		node("amd-1", "amd64"), node("arm-1", "arm64"),
		pod("api-1", "amd-1", "arm", "ReplicaSet"),
		pod("agent-1", "amd-1", "arm", "DaemonSet"),
		pod("bare", "amd-1", "arm", ""),
		pod("db-0", "amd-1", "arm", "StatefulSet"),
		execFormat, lying)
	evicted0, blocked0 := counter(t, metrics.EvictionEvicted), counter(t, metrics.EvictionBlocked)
	lies0 := notEvicted(t, misplaced.NotEvictedImageLies)

	for _, tc := range []struct {
		key       string
		refuse    bool
		wantRetry bool
		evictions []string
		events    []string
	}{
		{key: "shop/api-1", evictions: []string{"api-1"}, events: []string{
			"Warning ArchFilterMisplaced node amd-1 (linux/amd64) cannot run this pod: node-cannot-run: container \"app\" (arm) runs on linux/arm64, not on linux/amd64",
			"Normal ArchFilterMisplacedEvicted evicted from node amd-1, which cannot run it, so that its controller recreates it and archfilter places it"}},
		// Reported, never evicted: a DaemonSet's pod comes back to its node, a bare pod
		// would not come back.
		{key: "shop/agent-1", events: []string{
			"Warning ArchFilterMisplaced node amd-1 (linux/amd64) cannot run this pod: node-cannot-run: container \"app\" (arm) runs on linux/arm64, not on linux/amd64; not evicted (daemonset): a DaemonSet pod: its replacement would be bound to the same node"}},
		{key: "shop/bare", events: []string{
			"Warning ArchFilterMisplaced node amd-1 (linux/amd64) cannot run this pod: node-cannot-run: container \"app\" (arm) runs on linux/arm64, not on linux/amd64; not evicted (no-controller): no controller would recreate it"}},
		// The rate limit: the next eviction waits for its slot, the event is not repeated.
		{key: "shop/db-0", wantRetry: true, events: []string{
			"Warning ArchFilterMisplaced node amd-1 (linux/amd64) cannot run this pod: node-cannot-run: container \"app\" (arm) runs on linux/arm64, not on linux/amd64"}},
	} {
		retry, err := f.h.sync(ctx, tc.key)
		if err != nil {
			t.Fatalf("%s: %v", tc.key, err)
		}
		if (retry > 0) != tc.wantRetry {
			t.Errorf("%s: retry after %v, want a retry: %v", tc.key, retry, tc.wantRetry)
		}
		if diff := cmp.Diff(tc.evictions, f.evictions); diff != "" {
			t.Errorf("%s: evictions (-want,+got):\n%s", tc.key, diff)
		}
		if diff := cmp.Diff(tc.events, f.events()); diff != "" {
			t.Errorf("%s: events (-want,+got):\n%s", tc.key, diff)
		}
		f.evictions = nil
	}
	if got := counter(t, metrics.EvictionEvicted) - evicted0; got != 1 {
		t.Errorf("misplaced_evictions_total{result=evicted} grew by %v, want 1", got)
	}

	// The image lies: reported with why and counted once, though checked twice with
	// every slot free; never evicted.
	f.h.limiter.SetLimit(rate.Inf)
	for range 2 {
		if retry, err := f.h.sync(ctx, "shop/lying-1"); err != nil || retry != 0 {
			t.Errorf("lying image: retry %v, err %v", retry, err)
		}
	}
	if len(f.evictions) != 0 {
		t.Errorf("a pod whose image lies was evicted: %v", f.evictions)
	}
	want := []string{"Warning ArchFilterMisplaced node arm-1 (linux/arm64) cannot run this pod: exec-format-error: last state terminated (StartError, exit code 128): exec format error; " +
		"yet multi claims linux/arm64 (its manifest lists linux/amd64,linux/arm64): its binary is not of the platform its manifest says (kubectl archfilter check --deep multi shows it); " +
		`not evicted (image-lies): container "app" fails with exec format error on linux/arm64, which its image multi claims: a replacement would be placed on the same platform and fail again (kubectl archfilter check --deep multi shows which binary is wrong)`}
	if diff := cmp.Diff(want, f.events()); diff != "" {
		t.Errorf("lying image: events (-want,+got):\n%s", diff)
	}
	if got := notEvicted(t, misplaced.NotEvictedImageLies) - lies0; got != 1 {
		t.Errorf("misplaced_not_evicted_total{reason=image-lies} grew by %v, want 1", got)
	}

	// A PodDisruptionBudget refuses: retried later, not forced; the slot is given back.
	f.refuse["batch-1"] = true
	retry, err := f.h.sync(ctx, "shop/batch-1")
	if err != nil || retry != blockedRetry || len(f.evictions) != 0 {
		t.Errorf("refused eviction: retry %v, err %v, evictions %v; want a retry in %v", retry, err, f.evictions, blockedRetry)
	}
	if got := counter(t, metrics.EvictionBlocked) - blocked0; got != 1 {
		t.Errorf("misplaced_evictions_total{result=blocked} grew by %v, want 1", got)
	}
	evs := f.events()
	if len(evs) != 2 || !strings.Contains(evs[0], "exec-format-error: last state terminated (StartError, exit code 128): exec format error") || strings.Contains(evs[0], "not evicted") ||
		!strings.HasPrefix(evs[1], "Warning ArchFilterMisplacedEvictionBlocked") {
		t.Errorf("events %q: want the finding, then the blocked eviction", evs)
	}
	f.refuse["batch-1"] = false
	if retry, err := f.h.sync(ctx, "shop/batch-1"); err != nil || retry != 0 || !cmp.Equal(f.evictions, []string{"batch-1"}) {
		t.Errorf("after the budget allows it: retry %v, err %v, evictions %v", retry, err, f.evictions)
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"off", "report", "evict"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseMode("on"); err == nil || !strings.Contains(err.Error(), `--misplaced "on"`) {
		t.Errorf("ParseMode(on): %v, want an error naming the flag", err)
	}
}

// TestMovedTag: a pod that runs an image with its node's platform is not misplaced
// because its tag moved to one without it; the move is a note, once per pod.
func TestMovedTag(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	running := pod("web-1", "arm-1", "moved", "ReplicaSet")
	running.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", Image: "moved", ImageID: "docker.io/library/moved@" + movedDigest,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	f := newFixture(t, ctx, ModeEvict, 60, node("arm-1", "arm64"), node("amd-1", "amd64"), running)
	for range 2 {
		if _, err := f.h.sync(ctx, "shop/web-1"); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{`Normal ArchFilterMisplacedNote tag-moved: container "app" (moved): the tag now points to an image without linux/arm64 (it runs on linux/amd64); ` +
		"the pod runs docker.io/library/moved@" + movedDigest + ", which has it"}
	if diff := cmp.Diff(want, f.events()); diff != "" {
		t.Errorf("events (-want,+got):\n%s", diff)
	}
	if len(f.evictions) != 0 {
		t.Errorf("evicted %v", f.evictions)
	}
	if got := gauge(t, misplaced.NodeCannotRun); got != 0 {
		t.Errorf("misplaced_pods{kind=node-cannot-run} = %v, want 0", got)
	}
}

// TestSeesLinuxNodesBesideTheController: the companion registers the placement
// controller and then the watch in one informer factory, as its main does; the watch
// still reads every node, and finds an amd64-only image on a linux/arm64 node from
// the node's platform alone, with no exec format error.
func TestSeesLinuxNodesBesideTheController(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset(node("arm-1", "arm64"), node("amd-1", "amd64"), pod("api-1", "arm-1", "amd", "ReplicaSet"))
	s, err := decision.NewSettings(&config.ArchFilterArgs{FailurePolicy: config.FailurePolicyIgnore})
	if err != nil {
		t.Fatal(err)
	}
	factory, windows := informers.NewSharedInformerFactory(client, 0), controller.NewWindowsNodesFactory(client)
	recorder := record.NewFakeRecorder(10)
	if _, err := controller.New(controller.Options{Client: client, Informers: factory, WindowsNodes: windows.Core().V1().Nodes(),
		Resolver: fixtureAnswers, Credentials: noCredentials{}, Recorder: recorder, Settings: s, MaxGated: time.Minute}); err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Client: client, Informers: factory, Resolver: fixtureAnswers, Credentials: noCredentials{}, Recorder: recorder,
		Settings: s, Mode: ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	ictx, cancel := context.WithCancel(ctx)
	for _, f := range []informers.SharedInformerFactory{factory, windows} {
		f.Start(ictx.Done())
	}
	defer func() { cancel(); factory.Shutdown(); windows.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), h.synced...) {
		t.Fatal("informers did not sync")
	}
	if _, err := h.sync(ctx, "shop/api-1"); err != nil {
		t.Fatal(err)
	}
	want := `Warning ArchFilterMisplaced node arm-1 (linux/arm64) cannot run this pod: node-cannot-run: container "app" (amd) runs on linux/amd64, not on linux/arm64`
	select {
	case got := <-recorder.Events:
		if got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	default:
		t.Errorf("no event; want %q", want)
	}
}

// TestWaitsUntilTheReplacementIsPlaced: while nothing of archfilter would place a
// replacement (the webhook not serving yet), a pod eviction would heal is reported,
// not evicted, and checked again; once the webhook serves, it is evicted.
func TestWaitsUntilTheReplacementIsPlaced(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, ctx, ModeEvict, 60, node("amd-1", "amd64"), node("arm-1", "arm64"), pod("api-1", "amd-1", "arm", "ReplicaSet"))
	serving := false
	f.h.opts.ReplacementPlaced = func(*v1.Pod) (bool, string) {
		return serving, "the placement webhook does not serve yet: a replacement would be admitted ungated"
	}
	retry, err := f.h.sync(ctx, "shop/api-1")
	if err != nil || retry != notPlacedRetry || len(f.evictions) != 0 {
		t.Errorf("webhook not serving: retry %v, err %v, evictions %v; want none, checked again in %v", retry, err, f.evictions, notPlacedRetry)
	}
	want := []string{`Warning ArchFilterMisplaced node amd-1 (linux/amd64) cannot run this pod: node-cannot-run: container "app" (arm) runs on linux/arm64, not on linux/amd64; ` +
		"not evicted (replacement-not-placed): the placement webhook does not serve yet: a replacement would be admitted ungated"}
	if diff := cmp.Diff(want, f.events()); diff != "" {
		t.Errorf("events (-want,+got):\n%s", diff)
	}
	serving = true
	if retry, err := f.h.sync(ctx, "shop/api-1"); err != nil || retry != 0 || !cmp.Equal(f.evictions, []string{"api-1"}) {
		t.Errorf("webhook serving: retry %v, err %v, evictions %v; want api-1 evicted", retry, err, f.evictions)
	}
}

// TestUnresolvedRetry: a pod whose images do not resolve (a registry down) is
// checked again after Options.NegativeTTL, when the resolver asks again, so
// that a pod placed blind during an outage is healed soon after it.
func TestUnresolvedRetry(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, ctx, ModeEvict, 60, node("amd-1", "amd64"), pod("gone-1", "amd-1", "missing", "ReplicaSet"))
	f.h.opts.NegativeTTL = 20 * time.Second
	if retry, err := f.h.sync(ctx, "shop/gone-1"); err != nil || retry != 20*time.Second || len(f.evictions) != 0 {
		t.Errorf("retry %v, err %v, evictions %v; want none, checked again in 20s", retry, err, f.evictions)
	}
}

// TestReplacementMisplacedAgain: the replacement of a pod the watch evicted,
// placed where it cannot run again (its scheduler still serving a failed
// resolution), is evicted again only NegativeTTL after the first eviction; a
// sibling that existed before that eviction is evicted at once.
func TestReplacementMisplacedAgain(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	owned := func(p *v1.Pod, uid string, created time.Time) *v1.Pod {
		p.OwnerReferences[0].UID = types.UID(uid)
		p.CreationTimestamp = metav1.NewTime(created)
		return p
	}
	start := time.Now().Add(-time.Minute)
	f := newFixture(t, ctx, ModeEvict, 600, node("amd-1", "amd64"), node("arm-1", "arm64"),
		owned(pod("api-1", "amd-1", "arm", "ReplicaSet"), "rs-api", start),
		owned(pod("api-2", "amd-1", "arm", "ReplicaSet"), "rs-api", start),
		owned(pod("web-1", "amd-1", "arm", "ReplicaSet"), "rs-web", start))
	if retry, err := f.h.sync(ctx, "shop/api-1"); err != nil || retry != 0 || !cmp.Equal(f.evictions, []string{"api-1"}) {
		t.Fatalf("first eviction: retry %v, err %v, evictions %v; want api-1 evicted", retry, err, f.evictions)
	}
	// The sibling existed before: evicted (after the rate limiter's slot).
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := f.h.sync(ctx, "shop/api-2")
		return len(f.evictions) == 2, err
	}); err != nil {
		t.Fatalf("sibling api-2 not evicted: %v (evictions %v)", err, f.evictions)
	}
	// The replacement, created after the eviction and placed blind again.
	again := owned(pod("api-1-again", "amd-1", "arm", "ReplicaSet"), "rs-api", time.Now())
	if _, err := f.client.CoreV1().Pods("shop").Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		_, err := f.h.pods.Pods("shop").Get("api-1-again")
		return err == nil, nil
	}); err != nil {
		t.Fatal("the informer does not see the replacement")
	}
	retry, err := f.h.sync(ctx, "shop/api-1-again")
	if err != nil || retry <= defaultNegativeTTL-5*time.Second || retry > defaultNegativeTTL || len(f.evictions) != 2 {
		t.Errorf("replacement misplaced again: retry %v, err %v, evictions %v; want none, evicted again within %v", retry, err, f.evictions, defaultNegativeTTL)
	}
	// Once NegativeTTL has passed since the eviction, it is evicted.
	f.h.mu.Lock()
	f.h.evicted["rs-api"] = time.Now().Add(-defaultNegativeTTL)
	f.h.mu.Unlock()
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := f.h.sync(ctx, "shop/api-1-again")
		return len(f.evictions) == 3, err
	}); err != nil {
		t.Errorf("replacement not evicted after NegativeTTL: %v (evictions %v)", err, f.evictions)
	}
	// Another controller's pod is not held back.
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := f.h.sync(ctx, "shop/web-1")
		return len(f.evictions) == 4, err
	}); err != nil {
		t.Errorf("web-1 not evicted: %v (evictions %v)", err, f.evictions)
	}
}

package archfilter

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/apis/config/scheme"
	configv1 "github.com/archfilter/archfilter/apis/config/v1"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/policystore"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// Node names of the standard test cluster.
const (
	nodeAMD64      = "linux-amd64"
	nodeARM64      = "linux-arm64"
	nodeS390X      = "linux-s390x"
	nodeWindows    = "windows-amd64-ltsc2019"
	nodeBetaARM64  = "beta-labels-arm64"
	nodeNoPlatform = "no-platform-labels"
)

const windowsBuildLTSC2019 = "10.0.17763"

// Images of the standard fake registry.
const (
	imgMulti      = "registry.example.com/team/multi:1"        // linux/amd64, linux/arm64
	imgAMD64      = "registry.example.com/team/amd64-only:1"   // linux/amd64
	imgARM64      = "registry.example.com/team/arm64-only:1"   // linux/arm64
	imgARMv7      = "registry.example.com/team/armv7-only:1"   // linux/arm/v7
	imgS390X      = "registry.example.com/team/s390x-only:1"   // linux/s390x
	imgRISCV      = "registry.example.com/team/riscv64-only:1" // linux/riscv64
	imgWindows    = "registry.example.com/team/win-ltsc2019:1" // windows/amd64 10.0.17763.1234
	imgWin2022    = "registry.example.com/team/win-ltsc2022:1" // windows/amd64 10.0.20348.2227
	imgEverywhere = "registry.example.com/team/everywhere:1"   // every platform of the test nodes
	imgData       = "registry.example.com/team/data:1"         // data-only: platform.Any()
	imgFailed     = "registry.example.com/team/private:1"      // cached 401 failure
)

// failedImageErr is the cached failure of imgFailed, as the resolver reports it.
var failedImageErr = &resolver.Error{
	Image:            imgFailed,
	Registry:         "registry.example.com",
	CredentialSource: "secret default/regcred",
	StatusCode:       401,
	Reason:           resolver.ReasonUnauthorized,
	Err:              errors.New("authentication required"),
}

// failedImageTTL is how long the cached failure of imgFailed is served.
const failedImageTTL = 30 * time.Second

var testEpoch = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func mustSet(t testing.TB, list string) platform.Set {
	t.Helper()
	s, err := platform.ParseList(list)
	if err != nil {
		t.Fatalf("ParseList(%q): %v", list, err)
	}
	return s
}

func standardResults(t testing.TB, now time.Time) map[string]resolver.Result {
	windows := func(version string) platform.Set {
		return platform.NewSet(platform.Platform{OS: "windows", Architecture: "amd64", OSVersion: version})
	}
	return map[string]resolver.Result{
		imgMulti:      {Platforms: mustSet(t, "linux/amd64,linux/arm64"), Digest: "sha256:multi"},
		imgAMD64:      {Platforms: mustSet(t, "linux/amd64"), Digest: "sha256:amd64"},
		imgARM64:      {Platforms: mustSet(t, "linux/arm64"), Digest: "sha256:arm64"},
		imgARMv7:      {Platforms: mustSet(t, "linux/arm/v7"), Digest: "sha256:armv7"},
		imgS390X:      {Platforms: mustSet(t, "linux/s390x"), Digest: "sha256:s390x"},
		imgRISCV:      {Platforms: mustSet(t, "linux/riscv64"), Digest: "sha256:riscv64"},
		imgWindows:    {Platforms: windows("10.0.17763.1234"), Digest: "sha256:win2019"},
		imgWin2022:    {Platforms: windows("10.0.20348.2227"), Digest: "sha256:win2022"},
		imgEverywhere: {Platforms: mustSet(t, "linux/amd64,linux/arm64,linux/s390x,windows/amd64"), Digest: "sha256:everywhere"},
		imgData:       {Platforms: platform.Any(), Digest: "sha256:data"},
		imgFailed:     {Err: failedImageErr, Expires: now.Add(failedImageTTL)},
	}
}

func makeNode(name string, labels map[string]string) *v1.Node {
	w := st.MakeNode().Name(name)
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w = w.Label(k, labels[k])
	}
	return w.Obj()
}

func linuxNode(name, arch string) *v1.Node {
	return makeNode(name, map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: arch})
}

// testNodes is the standard cluster: one node per platform, a Windows node
// with a build label, a node with only beta labels and one with no labels.
func testNodes() []*v1.Node {
	return []*v1.Node{
		linuxNode(nodeAMD64, "amd64"),
		linuxNode(nodeARM64, "arm64"),
		linuxNode(nodeS390X, "s390x"),
		makeNode(nodeWindows, map[string]string{
			v1.LabelOSStable:     "windows",
			v1.LabelArchStable:   "amd64",
			v1.LabelWindowsBuild: windowsBuildLTSC2019,
		}),
		makeNode(nodeBetaARM64, map[string]string{"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "arm64"}),
		makeNode(nodeNoPlatform, nil),
	}
}

func nodeByName(t testing.TB, nodes []*v1.Node, name string) *v1.Node {
	t.Helper()
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %q", name)
	return nil
}

func nodeInfo(node *v1.Node) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	return ni
}

func nodeInfos(nodes []*v1.Node) []fwk.NodeInfo {
	out := make([]fwk.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, nodeInfo(n))
	}
	return out
}

// makePod returns a pod in "default" with one container per image; its UID
// is its name, since held state is keyed by UID.
func makePod(name string, images ...string) *st.PodWrapper {
	w := st.MakePod().Namespace("default").Name(name).UID(name)
	for _, img := range images {
		w = w.Container(img)
	}
	return w
}

// defaultArgs converts a defaulted v1.ArchFilterArgs through the scheme, as
// the scheduler does with a profile that gives no args.
func defaultArgs(t testing.TB) *config.ArchFilterArgs {
	t.Helper()
	versioned := &configv1.ArchFilterArgs{}
	scheme.Scheme.Default(versioned)
	args := &config.ArchFilterArgs{}
	if err := scheme.Scheme.Convert(versioned, args, nil); err != nil {
		t.Fatalf("converting default args: %v", err)
	}
	return args
}

// testContext is a ktesting context cancelled when the test ends, which stops
// the informers and the plugin's timers.
func testContext(t *testing.T) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	return ctx
}

// ---------------------------------------------------------------------------
// Fake resolver

// asyncRequest is a ResolveAsync call the test has not completed yet.
type asyncRequest struct {
	req  resolver.Request
	done func(resolver.Result)
}

// fakeResolver answers Lookup from a map, records ResolveAsync calls for the
// test to complete, and fails the test on the blocking Resolve: the plugin
// must never wait on a registry.
type fakeResolver struct {
	t     testing.TB
	clock interface{ Now() time.Time }

	mu      sync.Mutex
	results map[string]resolver.Result
	lookups int
	// async lists every ResolveAsync call in order; pending the ones not completed.
	async   []string
	pending []asyncRequest
	// denyAsync names the extension point running now that must not call
	// ResolveAsync ("" allows it).
	denyAsync string
	// completeWithin, when set, makes ResolveAsync complete with the value on
	// a separate goroutine before it returns: a worker that answers at once
	// (a cache hit, or a fetch shared with another pod).
	completeWithin map[string]resolver.Result
}

var _ resolver.Interface = &fakeResolver{}

func newFakeResolver(t testing.TB, clk interface{ Now() time.Time }, results map[string]resolver.Result) *fakeResolver {
	return &fakeResolver{t: t, clock: clk, results: results}
}

func (r *fakeResolver) Lookup(req resolver.Request) (resolver.Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups++
	res, ok := r.results[req.Image]
	if ok && !res.Expires.IsZero() && !r.clock.Now().Before(res.Expires) {
		// Expired entries are no longer served, as in the real cache.
		return resolver.Result{}, false
	}
	return res, ok
}

func (r *fakeResolver) ResolveAsync(req resolver.Request, done func(resolver.Result)) {
	r.mu.Lock()
	if r.denyAsync != "" {
		r.t.Errorf("ResolveAsync(%s) called from %s: only PreEnqueue may start resolutions", req.Image, r.denyAsync)
	}
	r.async = append(r.async, req.Image)
	immediate, now := r.completeWithin[req.Image]
	if now {
		r.results[req.Image] = immediate
	} else {
		r.pending = append(r.pending, asyncRequest{req: req, done: done})
	}
	r.mu.Unlock()
	if now {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			done(immediate)
		}()
		wg.Wait()
	}
}

func (r *fakeResolver) Resolve(_ context.Context, req resolver.Request) resolver.Result {
	r.t.Fatalf("blocking Resolve(%s) called: the plugin must never wait on a registry", req.Image)
	return resolver.Result{}
}

// complete stores res for image and calls every pending callback for it,
// each from its own goroutine as the resolver's workers do, and returns when
// they have returned. It returns the number of callbacks called.
func (r *fakeResolver) complete(image string, res resolver.Result) int {
	r.mu.Lock()
	r.results[image] = res
	var calls []asyncRequest
	kept := r.pending[:0]
	for _, p := range r.pending {
		if p.req.Image == image {
			calls = append(calls, p)
		} else {
			kept = append(kept, p)
		}
	}
	r.pending = kept
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.done(res)
		}()
	}
	wg.Wait()
	return len(calls)
}

func (r *fakeResolver) set(image string, res resolver.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results[image] = res
}

func (r *fakeResolver) asyncCalls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.async...)
}

func (r *fakeResolver) pendingImages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.pending {
		out = append(out, p.req.Image)
	}
	sort.Strings(out)
	return out
}

func (r *fakeResolver) lookupCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups
}

// deny makes ResolveAsync an error while fn runs (an extension point of the
// scheduling cycle).
func (r *fakeResolver) deny(point string, fn func()) {
	r.mu.Lock()
	r.denyAsync = point
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.denyAsync = ""
		r.mu.Unlock()
	}()
	fn()
}

// ---------------------------------------------------------------------------
// Fake credentials and activator

type fakeCredentials struct {
	mu    sync.Mutex
	calls int
}

type anonymous struct{}

func (anonymous) For(string) []resolver.Credential { return nil }

func (c *fakeCredentials) ForPod(pod *v1.Pod) resolver.Credentials {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return anonymous{}
}

// fakeActivator records Activate calls. It does not call back into the plugin:
// with the fake clock, timers run under the clock's lock.
type fakeActivator struct {
	mu    sync.Mutex
	calls []map[string]*v1.Pod
}

var _ fwk.PodActivator = &fakeActivator{}

func (a *fakeActivator) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cp := make(map[string]*v1.Pod, len(pods))
	for k, v := range pods {
		cp[k] = v
	}
	a.calls = append(a.calls, cp)
}

// activations counts how many times key was activated.
func (a *fakeActivator) activations(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.calls {
		if _, ok := c[key]; ok {
			n++
		}
	}
	return n
}

func (a *fakeActivator) keys() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, c := range a.calls {
		for k := range c {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// ---------------------------------------------------------------------------
// Harness

type harnessConfig struct {
	args  *config.ArchFilterArgs
	nodes []*v1.Node // nil: testNodes()
	// snapshot are the nodes of the framework's snapshot (Reserve reads them);
	// nil: nodes.
	snapshot []*v1.Node
	objects  []runtime.Object           // namespaces, pods
	results  map[string]resolver.Result // nil: standardResults
	// standby: the process does not lead (leader.go).
	standby bool
	// policies is the ArchFilterPolicy store; policiesWatched, whether it
	// watched from the start (the policies' event is registered then).
	policies        *policystore.Store
	policiesWatched bool
}

type harness struct {
	t       testing.TB
	pl      *ArchFilter
	res     *fakeResolver
	creds   *fakeCredentials
	act     *fakeActivator
	rec     *events.FakeRecorder
	clock   *testingclock.FakeClock
	client  *fake.Clientset
	handle  framework.Framework
	nodes   []*v1.Node
	infos   []fwk.NodeInfo
	factory informers.SharedInformerFactory
}

// watchTracker tells when the informers' watches are established, so objects
// created by a test after that are seen (the fake tracker does not replay).
type watchTracker struct {
	mu      sync.Mutex
	started sets.Set[string]
}

func trackWatches(client *fake.Clientset) *watchTracker {
	w := &watchTracker{started: sets.New[string]()}
	client.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := action.(clienttesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		gvr := action.GetResource()
		wi, err := client.Tracker().Watch(gvr, action.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		w.mu.Lock()
		w.started.Insert(gvr.Resource)
		w.mu.Unlock()
		return true, wi, nil
	})
	return w
}

func (w *watchTracker) has(resources ...string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started.HasAll(resources...)
}

func newHarness(t testing.TB, ctx context.Context, hc harnessConfig) *harness {
	t.Helper()
	// Informers and the plugin's timers stop before Shutdown waits for them.
	ctx, cancel := context.WithCancel(ctx)
	if hc.args == nil {
		hc.args = defaultArgs(t)
	}
	if hc.nodes == nil {
		hc.nodes = testNodes()
	}
	clk := testingclock.NewFakeClock(testEpoch)
	if hc.results == nil {
		hc.results = standardResults(t, clk.Now())
	}
	objs := append([]runtime.Object(nil), hc.objects...)
	for _, n := range hc.nodes {
		objs = append(objs, n)
	}
	client := fake.NewClientset(objs...)
	watches := trackWatches(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	act := &fakeActivator{}
	rec := events.NewFakeRecorder(1000)
	if hc.snapshot == nil {
		hc.snapshot = hc.nodes
	}
	fh, err := frameworkruntime.NewFramework(ctx, nil, nil,
		frameworkruntime.WithSnapshotSharedLister(internalcache.NewSnapshot(nil, hc.snapshot)),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithPodActivator(act),
		frameworkruntime.WithEventRecorder(rec))
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	res := newFakeResolver(t, clk, hc.results)
	creds := &fakeCredentials{}
	pl, err := newPlugin(ctx, hc.args, fh, deps{resolver: res, credentials: creds, clock: clk, leading: func() bool { return !hc.standby },
		policies: hc.policies, policiesWatched: hc.policiesWatched})
	if err != nil {
		t.Fatalf("newPlugin: %v", err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	h := &harness{
		t: t, pl: pl, res: res, creds: creds, act: act, rec: rec, clock: clk,
		client: client, handle: fh, nodes: hc.nodes, infos: nodeInfos(hc.nodes), factory: factory,
	}
	h.poll(ctx, "informer watches to start", func() bool { return watches.has("nodes", "pods") })
	h.poll(ctx, "node index to hold every node", func() bool {
		_, total := pl.nodes.matching(platform.Any())
		return total == len(hc.nodes)
	})
	// The platform table is fed after the index, by the same handler: what PreFilter
	// decides and its events name depend on it.
	h.poll(ctx, "platform table to hold every node", func() bool {
		return len(pl.platforms.snapshot().ids) == len(hc.nodes)
	})
	return h
}

// poll waits for cond with a deadline; there are no sleeps as synchronisation.
func (h *harness) poll(ctx context.Context, what string, cond func() bool) {
	h.t.Helper()
	pollFor(h.t, ctx, what, cond)
}

func pollFor(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func (h *harness) preEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	return h.pl.PreEnqueue(ctx, pod)
}

// preFilter runs PreFilter on a fresh cycle state, refusing ResolveAsync.
func (h *harness) preFilter(ctx context.Context, pod *v1.Pod) (*framework.CycleState, *fwk.PreFilterResult, *fwk.Status) {
	state := framework.NewCycleState()
	var (
		res    *fwk.PreFilterResult
		status *fwk.Status
	)
	h.res.deny("PreFilter", func() { res, status = h.pl.PreFilter(ctx, state, pod, h.infos) })
	return state, res, status
}

func (h *harness) filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, node *v1.Node) *fwk.Status {
	var status *fwk.Status
	h.res.deny("Filter", func() { status = h.pl.Filter(ctx, state, pod, nodeInfo(node)) })
	return status
}

// feasible drives Filter over every node the PreFilterResult allows and
// returns the accepted node names, sorted.
func (h *harness) feasible(ctx context.Context, state fwk.CycleState, pod *v1.Pod, pfr *fwk.PreFilterResult) []string {
	var out []string
	for _, n := range h.nodes {
		if !pfr.AllNodes() && !pfr.NodeNames.Has(n.Name) {
			continue
		}
		if s := h.filter(ctx, state, pod, n); s.IsSuccess() {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// events drains the recorder.
func (h *harness) events() []string {
	return drain(h.rec)
}

func drain(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// eventsWithReason returns the drained events of one reason.
func withReason(evs []string, reason string) []string {
	var out []string
	for _, e := range evs {
		if f := strings.Fields(e); len(f) > 1 && f[1] == reason {
			out = append(out, e)
		}
	}
	return out
}

// statusResult is a Status in a form cmp.Diff can print.
type statusResult struct {
	Code    fwk.Code
	Message string
}

func statusOf(s *fwk.Status) statusResult {
	return statusResult{Code: s.Code(), Message: s.Message()}
}

func want(code fwk.Code, msg string) statusResult {
	return statusResult{Code: code, Message: msg}
}

var success = statusResult{Code: fwk.Success}

func stateSet(t testing.TB, state fwk.CycleState) string {
	t.Helper()
	s, err := readState(state)
	if err != nil {
		return fmt.Sprintf("<no state: %v>", err)
	}
	return s.set.String()
}

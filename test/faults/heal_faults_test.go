//go:build !k8s1.35

package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

// healEvictionsPerMinute is the companions' --misplaced-evictions-per-minute in
// the rows that heal: a burst's misplaced pods (a few dozen) within seconds,
// so the time to heal measures when the companion may evict, not its limit.
const healEvictionsPerMinute = 600

// healFlags turn healing on in a placement companion.
var healFlags = []string{"--misplaced=evict", "--misplaced-evictions-per-minute=" + strconv.Itoa(healEvictionsPerMinute)}

// The companion's events on a misplaced pod (internal/placement/heal).
const (
	reasonMisplaced = "ArchFilterMisplaced"
	reasonEvicted   = "ArchFilterMisplacedEvicted"
	notPlacedEvent  = "not evicted (replacement-not-placed)"
)

// healCompanion is the companion in --mode=heal as a host process.
type healCompanion struct {
	*framework.Process
	metricsPort int
}

// startHealer runs the companion in --mode=heal --misplaced=evict beside the
// archfilter scheduler scheduler (--skip-scheduler-names: it places the
// replacements), as the chart's heal.enabled runs it, and waits until it
// watches bound pods.
func startHealer(ctx context.Context, t *testing.T, scheduler string) *healCompanion {
	t.Helper()
	bin := placementBinary(t)
	if err := framework.EnsureNamespace(ctx, env.Client, placementNamespace); err != nil {
		t.Fatal(err)
	}
	dir := logDir(t)
	port := freePort(t)
	args := []string{"--kubeconfig", env.Kubeconfig, "--args", companionArgs(t, dir), "--mode=heal",
		"--skip-scheduler-names", scheduler, "--namespace", placementNamespace,
		"--leader-elect", "--lease-name", dnsName("heal-" + t.Name()),
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port), "--metrics-auth=none", "-v", "2"}
	p, err := framework.StartProcess(context.WithoutCancel(ctx), bin, filepath.Join(dir, "heal.log"), append(args, healFlags...), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- heal companion (%s):\n%s", p.LogPath, p.Tail(20))
		}
		p.Stop()
	})
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("exited")
		}
		return p.LogContains("Watching bound pods for misplaced ones"), nil
	})
	if err != nil {
		t.Fatalf("the heal companion does not watch bound pods: %v\n%s", err, p.Tail(30))
	}
	return &healCompanion{Process: p, metricsPort: port}
}

// evictionsNote says how many pods the companion serving metrics on port
// (plain HTTP) evicted.
func evictionsNote(t *testing.T, port int) string {
	t.Helper()
	n, _, err := metric(-port, `archfilter_placement_misplaced_evictions_total{result="evicted"}`)
	if err != nil {
		return fmt.Sprintf("evictions not read: %v", err)
	}
	return fmt.Sprintf("%.0f pods evicted by the companion", n)
}

// singlePlatformImages are the first of the burst's images of each single
// platform: every one has nodes that cannot run it.
func singlePlatformImages() []framework.Image {
	var out []framework.Image
	seen := map[string]bool{}
	for _, im := range burstImages() {
		if len(im.Platforms) == 1 && !seen[im.About] {
			seen[im.About] = true
			out = append(out, im)
		}
	}
	return out
}

// TestHealBeforeWebhookServes is the case docs/placement.md ("Misplaced pods")
// describes: a companion in evict mode starts while its webhook cannot be
// reached (the proxy the API server calls it through is down) and misplaced
// pods exist. It evicts none of them while the webhook does not serve (each
// gets the replacement-not-placed event): a replacement would be admitted
// ungated and placed blind. Once the webhook serves, it evicts them, and their
// replacements come back gated and are placed where they run.
func TestHealBeforeWebhookServes(t *testing.T) {
	const fault = "companion in --misplaced=evict starts while its webhook is unreachable, with misplaced pods (ReplicaSets'); the webhook serves once each pod was checked twice"
	ctx, ns := setup(t)
	// The stock scheduler, which will place the replacements, is not running
	// yet: the test binds the pods itself, each to a node that cannot run it,
	// as pods placed before the mode was installed.
	s := newSchedulers(t, stockTemplate(), schedulerOptions{})
	b := newBurst(ns, s.name, 0)
	b.images = singlePlatformImages()
	b.total = len(b.images)
	b.replicaSets, b.healing = true, true
	b.watch(ctx, t)
	b.start(ctx)
	<-b.done
	if b.err != nil {
		t.Fatal(b.err)
	}
	misplaced := bindWhereNotRunning(ctx, t, b)
	s.start(ctx)
	s.leader(ctx, time.Minute)

	c := newCompanions(ctx, t)
	c.proxy.setDown(true)
	c.start(ctx, healFlags...)
	leader := c.leader(ctx)
	// Reported, not evicted, while the webhook does not serve.
	for _, p := range misplaced {
		waitEvent(ctx, t, p, reasonMisplaced, notPlacedEvent)
	}
	// The outage outlasts the watch's second look at each pod (a refused pod
	// is checked again 30s later), which must not evict either.
	time.Sleep(32 * time.Second) // the outage's remaining time, not synchronisation
	for _, p := range misplaced {
		if got, err := env.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{}); err != nil || got.UID != p.UID || got.DeletionTimestamp != nil {
			t.Errorf("%s was evicted while the webhook did not serve (err %v)", p.Name, err)
		}
		if evs := podEvents(ctx, t, p, reasonEvicted); len(evs) > 0 {
			t.Errorf("%s: %s event while the webhook did not serve: %q", p.Name, reasonEvicted, evs)
		}
	}
	b.healFrom = time.Now()
	c.proxy.setDown(false)
	o := b.settle(ctx, t, time.Minute, placementMaxGated, true)
	// Every pod left is a replacement admitted with the gate, and placed by
	// the companion's affinity where its image runs (settle judged that).
	gated, replacements := 0, 0
	list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: framework.LabelApp + "=burst"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range live(list.Items) {
		b.mu.Lock()
		i, _ := indexOf(&p)
		original, wasGated := b.original[i] == p.Name, b.gated[p.Name]
		b.mu.Unlock()
		if original {
			t.Errorf("%s is still the original pod, not evicted", p.Name)
			continue
		}
		replacements++
		if wasGated {
			gated++
		} else {
			t.Errorf("replacement %s was admitted without the placement gate: the companion evicted before its webhook served", p.Name)
		}
		if _, ok := p.Annotations["archfilter.io/decision"]; !ok {
			t.Errorf("replacement %s has no archfilter.io/decision annotation: the placement controller did not place it", p.Name)
		}
	}
	report.record(orderHealBeforeWebhook, fault, o, b.firstReplacementBindAfter(b.healFrom), -1,
		fmt.Sprintf("no eviction while the webhook was unreachable (%d replacement-not-placed events); %d of %d replacements gated; %s",
			len(misplaced), gated, replacements, evictionsNote(t, leader.metricsPort)))
	o.checkHealed(t)
	if o.misplaced != len(misplaced) {
		t.Errorf("%d originals misplaced when bound, want the %d the test bound", o.misplaced, len(misplaced))
	}
}

// firstReplacementBindAfter is the time from t to the first bind of a pod
// that is not an original (a ReplicaSet's replacement) after it.
func (b *burst) firstReplacementBindAfter(t time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	originals := map[string]bool{}
	for _, name := range b.original {
		originals[name] = true
	}
	var first time.Time
	for name, at := range b.bound {
		if !originals[name] && at.After(t) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	if first.IsZero() {
		return 0
	}
	return first.Sub(t)
}

// bindWhereNotRunning waits for each ReplicaSet's pod of b and binds it to a
// node its image cannot run on; it returns the pods as bound.
func bindWhereNotRunning(ctx context.Context, t *testing.T, b *burst) []*v1.Pod {
	t.Helper()
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	var out []*v1.Pod
	for i := 0; i < b.total; i++ {
		var pod *v1.Pod
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := env.Client.CoreV1().Pods(b.ns).List(ctx, metav1.ListOptions{LabelSelector: burstIndexLabel + "=" + strconv.Itoa(i)})
			if err != nil || len(list.Items) == 0 {
				return false, nil
			}
			pod = &list.Items[0]
			return true, nil
		})
		if err != nil {
			t.Fatalf("ReplicaSet %s created no pod: %v (is kube-controller-manager running?)", b.podName(i), err)
		}
		node := ""
		for j := range nodes.Items {
			if n := &nodes.Items[j]; !b.image(i).RunsOn(n) {
				if ok, _ := framework.Schedulable(n); ok {
					node = n.Name
					break
				}
			}
		}
		if node == "" {
			t.Fatalf("no node that cannot run %s (%s)", b.image(i).Name, b.image(i).About)
		}
		binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target: v1.ObjectReference{Kind: "Node", Name: node}}
		if err := env.Client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("binding %s to %s: %v", pod.Name, node, err)
		}
		pod.Spec.NodeName = node
		out = append(out, pod)
	}
	return out
}

// podEvents are the messages of p's (this UID's) events of reason.
func podEvents(ctx context.Context, t *testing.T, p *v1.Pod, reason string) []string {
	t.Helper()
	sel := fields.Set{"involvedObject.name": p.Name, "involvedObject.uid": string(p.UID), "reason": reason}.AsSelector().String()
	evs, err := env.Client.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.Message)
	}
	return out
}

// waitEvent waits, two minutes at most, for an event of reason on p whose
// message contains text.
func waitEvent(ctx context.Context, t *testing.T, p *v1.Pod, reason, text string) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got = podEvents(ctx, t, p, reason)
		for _, m := range got {
			if strings.Contains(m, text) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s: no %s event saying %q (events: %q)", p.Name, reason, text, got)
	}
}

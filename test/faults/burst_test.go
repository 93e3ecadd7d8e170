//go:build !k8s1.35

package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ggcrv1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/pkg/placement"
	"github.com/archfilter/archfilter/test/e2e/framework"
)

var deleteNow = metav1.DeleteOptions{GracePeriodSeconds: new(int64)}

var dnsName = framework.DNSName

// distinctImages is how many distinct images a burst's pods use: each must
// be resolved once by whoever schedules it, so a failover with a cold cache
// costs that many registry round trips.
const distinctImages = 24

// platformSets are the images' platforms, in turn: every architecture of the
// cluster, alone and together, so that each node platform has pods only it,
// or it among others, can run.
var platformSets = [][]ggcrv1.Platform{
	{linux("amd64")},
	{linux("arm64")},
	{linux("amd64"), linux("arm64")},
	{linux("s390x")},
	{linux("ppc64le")},
	{linux("amd64"), linux("arm64"), linux("ppc64le"), linux("s390x")},
	{{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.7009"}},
	{linux("arm64"), linux("s390x")},
}

func linux(arch string) ggcrv1.Platform { return ggcrv1.Platform{OS: "linux", Architecture: arch} }

// burstImages are the distinct images of the bursts, pushed once by TestMain.
func burstImages() []framework.Image {
	out := make([]framework.Image, distinctImages)
	for i := range out {
		ps := platformSets[i%len(platformSets)]
		out[i] = framework.Image{Name: fmt.Sprintf("faults/img-%02d", i), Tag: "v1", Platforms: ps, Index: len(ps) > 1 || i%2 == 0,
			About: strings.Join(framework.Image{Platforms: ps}.PlatformStrings(), ",")}
	}
	return out
}

// burst creates pods at a steady pace in a goroutine, each with one of the
// distinct images in turn, and records when each was bound.
type burst struct {
	ns, scheduler string
	total         int
	interval      time.Duration
	images        []framework.Image
	// mutate adjusts each pod (a gate, a group).
	mutate func(*v1.Pod)
	// gangs is how many gangs of gangSize pods the burst interleaves (Kubernetes'
	// gang scheduling: a PodGroup each, members naming it).
	gangs int
	// replicaSets creates each pod through a ReplicaSet of one replica (named
	// as the pod would be), so that an evicted pod comes back: the rows that
	// heal. The burst's figures (binds, recovery, misplaced) are its original
	// pods', the first of each ReplicaSet; healing is judged on the pods left.
	replicaSets bool
	// healing, with replicaSets, makes settle wait (healWait at most) until no
	// pod is left on a node that cannot run it, and measure the time to heal
	// from healFrom (the fault's end).
	healing  bool
	healFrom time.Time

	created chan int
	done    chan struct{}
	err     error

	mu    sync.Mutex
	bound map[string]time.Time // pod name -> when the test saw it bound
	node  map[string]string
	// original is, per index, the name of its first pod (the burst's own; a
	// ReplicaSet's replacements come later); gated whether each pod was
	// admitted with the placement gate.
	original map[int]string
	gated    map[string]bool
	index    map[string]int
}

func newBurst(ns, scheduler string, total int) *burst {
	return &burst{ns: ns, scheduler: scheduler, total: total, interval: 50 * time.Millisecond, images: burstImages(),
		bound: map[string]time.Time{}, node: map[string]string{}, original: map[int]string{}, gated: map[string]bool{}, index: map[string]int{}}
}

// burstIndexLabel is a pod's index in its burst (on ReplicaSets' templates too).
const burstIndexLabel = "faults.archfilter.io/index"

// healWait bounds the wait for healing after a burst has settled.
const healWait = 3 * time.Minute

// indexOf is a burst pod's index, from its label.
func indexOf(p *v1.Pod) (int, bool) {
	i, err := strconv.Atoi(p.Labels[burstIndexLabel])
	return i, err == nil
}

// gangSize is the members of each gang of a burst.
const gangSize = 4

// gangOf is the PodGroup pod i belongs to, or "": every 12th pod, in turn.
func (b *burst) gangOf(i int) string {
	if b.gangs == 0 || i%12 != 5 || i/12 >= b.gangs*gangSize {
		return ""
	}
	return fmt.Sprintf("gang-%d", (i/12)%b.gangs)
}

// createGangs creates the burst's PodGroups.
func (b *burst) createGangs(ctx context.Context, t *testing.T) {
	t.Helper()
	for g := 0; g < b.gangs; g++ {
		if err := framework.CreateGangPodGroup(ctx, env.Client, b.ns, fmt.Sprintf("gang-%d", g), gangSize); err != nil {
			t.Fatalf("gang scheduling (GenericWorkload, beta and off by default): the suite's API server serves it: %v", err)
		}
	}
}

// image is pod i's image.
func (b *burst) image(i int) framework.Image { return b.images[i%len(b.images)] }

func (b *burst) podName(i int) string { return fmt.Sprintf("burst-%03d", i) }

// watch records binds of the burst's pods until ctx ends.
func (b *burst) watch(ctx context.Context, t *testing.T) {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(b.ns))
	inf := factory.Core().V1().Pods().Informer()
	record := func(obj any) {
		p, ok := obj.(*v1.Pod)
		if !ok {
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, seen := b.gated[p.Name]; !seen {
			// The watch started before the burst: the first state seen is the
			// pod as admitted, and an index's first pod is its original.
			b.gated[p.Name] = placement.HasGate(p)
			if i, ok := indexOf(p); ok {
				b.index[p.Name] = i
				if _, seen := b.original[i]; !seen {
					b.original[i] = p.Name
				}
			}
		}
		if _, seen := b.bound[p.Name]; !seen && p.Spec.NodeName != "" {
			b.bound[p.Name] = time.Now()
			b.node[p.Name] = p.Spec.NodeName
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) }}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	factory.Start(ctx.Done())
	// Shutdown waits for the informers, which stop with ctx.
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.WaitForCacheSync(ctx.Done())
}

// start creates the pods in the background; created receives each index.
func (b *burst) start(ctx context.Context) {
	b.created, b.done = make(chan int, b.total), make(chan struct{})
	go func() {
		defer close(b.done)
		defer close(b.created)
		for i := 0; i < b.total; i++ {
			im := b.image(i)
			p := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: b.podName(i), Namespace: b.ns,
					Labels: map[string]string{framework.LabelApp: "burst", burstIndexLabel: strconv.Itoa(i)}},
				Spec: v1.PodSpec{
					SchedulerName:                 b.scheduler,
					Containers:                    []v1.Container{{Name: "c", Image: im.Ref(env.Public, env.Private)}},
					TerminationGracePeriodSeconds: new(int64),
					Tolerations:                   []v1.Toleration{{Operator: v1.TolerationOpExists}},
				},
			}
			if g := b.gangOf(i); g != "" {
				p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &g}
			}
			if b.mutate != nil {
				b.mutate(p)
			}
			// The apiserver may be restarting: retry until it answers.
			var last error
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				if b.replicaSets {
					_, last = env.Client.AppsV1().ReplicaSets(b.ns).Create(ctx, replicaSetOf(p), metav1.CreateOptions{})
				} else {
					_, last = env.Client.CoreV1().Pods(b.ns).Create(ctx, p, metav1.CreateOptions{})
				}
				return last == nil || apierrors.IsAlreadyExists(last), nil
			})
			if err != nil {
				b.err = fmt.Errorf("creating pod %s: %w (last: %v)", p.Name, err, last)
				return
			}
			b.created <- i
			time.Sleep(b.interval)
		}
	}()
}

// replicaSetOf is a ReplicaSet of one replica of p, named as p.
func replicaSetOf(p *v1.Pod) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: p.Labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels, Annotations: p.Annotations}, Spec: p.Spec},
		},
	}
}

// waitCreated blocks until n pods have been created (or the burst ended).
func (b *burst) waitCreated(n int) {
	for i := range b.created {
		if i >= n-1 {
			return
		}
	}
}

// originalBinds are the bind times of the burst's original pods (b.mu held).
func (b *burst) originalBinds() []time.Time {
	var out []time.Time
	for _, name := range b.original {
		if at, ok := b.bound[name]; ok {
			out = append(out, at)
		}
	}
	return out
}

// firstBindAfter is the first bind of an original pod the test saw after t,
// and the time from t to it.
func (b *burst) firstBindAfter(t time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var first time.Time
	for _, at := range b.originalBinds() {
		if at.After(t) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	if first.IsZero() {
		return 0, false
	}
	return first.Sub(t), true
}

// boundSince counts the original pods bound after t, and when the last of them was.
func (b *burst) boundSince(t time.Time) (n int, last time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, at := range b.originalBinds() {
		if at.After(t) {
			n++
			if at.After(last) {
				last = at
			}
		}
	}
	return n, last
}

// ungatedOriginals counts the burst's original pods admitted without the
// placement gate: the placement mode took no decision for them.
func (b *burst) ungatedOriginals() (n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, name := range b.original {
		if !b.gated[name] {
			n++
		}
	}
	return n
}

// outcome is what became of a burst's pods.
type outcome struct {
	pods, bound, explained, lost, misplaced, stuck int
	// details name the pods counted as lost, misplaced or stuck.
	details []string
	// healing: the row heals (misplaced pods are evicted and come back);
	// misplacedEnd counts the pods still misplaced when it ended, toHeal the
	// time from the fault's end to the bind of the last replacement of a
	// misplaced pod placed right.
	healing      bool
	misplacedEnd int
	toHeal       time.Duration
}

// settle waits for the burst to end and every pod to be bound, or (unless
// bound is set) left Pending with an event that says why (FailedScheduling:
// the failure policy), for at most timeout; then it judges each pod. maxGated,
// when non-zero, is the placement mode's --max-gated: a pod still carrying its
// gate longer is stuck. With replicaSets, a pod is its ReplicaSet's pod that
// is not being deleted, one per index, and misplaced counts the originals
// bound where they cannot run; with healing too, it waits healWait more for
// no pod to be left misplaced, and measures the healing.
func (b *burst) settle(ctx context.Context, t *testing.T, timeout, maxGated time.Duration, bound bool) outcome {
	t.Helper()
	<-b.done
	if b.err != nil {
		t.Fatal(b.err)
	}
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*v1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	runs := func(i int, node string) bool { n := byName[node]; return n != nil && b.image(i).RunsOn(n) }
	healing := b.replicaSets && b.healing
	if healing {
		timeout += healWait
	}
	var pods []v1.Pod
	defer b.waitWatched(ctx, &pods)
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(b.ns).List(ctx, metav1.ListOptions{LabelSelector: framework.LabelApp + "=burst"})
		if err != nil {
			return false, nil
		}
		pods = live(list.Items)
		indices := map[int]bool{}
		for i := range pods {
			p := &pods[i]
			idx, _ := indexOf(p)
			indices[idx] = true
			if p.Spec.NodeName == "" && (bound || !b.explained(ctx, p)) {
				return false, nil
			}
			if healing && p.Spec.NodeName != "" && !runs(idx, p.Spec.NodeName) {
				return false, nil
			}
		}
		return len(pods) == b.total && len(indices) == b.total, nil
	})
	o := outcome{pods: b.total, healing: healing}
	seen := map[int]bool{}
	for i := range pods {
		p := &pods[i]
		idx, _ := indexOf(p)
		seen[idx] = true
		switch {
		case p.Spec.NodeName != "":
			o.bound++
			if runs(idx, p.Spec.NodeName) {
				break
			}
			if b.replicaSets {
				o.misplacedEnd++
				o.details = append(o.details, fmt.Sprintf("misplaced at the end: %s (%s) on %s", p.Name, b.image(idx).About, p.Spec.NodeName))
			} else {
				o.misplaced++
				o.details = append(o.details, fmt.Sprintf("misplaced: %s (%s) on %s", p.Name, b.image(idx).About, p.Spec.NodeName))
			}
		case maxGated > 0 && placement.HasGate(p) && time.Since(p.CreationTimestamp.Time) > maxGated+5*time.Second:
			o.stuck++
			o.details = append(o.details, fmt.Sprintf("stuck: %s gated for %s", p.Name, time.Since(p.CreationTimestamp.Time).Round(time.Second)))
		case b.explained(ctx, p):
			o.explained++
		default:
			o.lost++
			o.details = append(o.details, fmt.Sprintf("lost: %s Pending without an event", p.Name))
		}
	}
	if b.replicaSets {
		b.waitWatched(ctx, &pods)
		b.judgeOriginals(&o, pods, runs)
	}
	// A pod bound twice would have two Scheduled events.
	if evs, err := env.Client.CoreV1().Events(b.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"}); err == nil {
		scheduled := map[string]int32{}
		for _, e := range evs.Items {
			scheduled[e.InvolvedObject.Name] += max(e.Count, 1)
		}
		for name, n := range scheduled {
			if n > 1 {
				o.misplaced++
				o.details = append(o.details, fmt.Sprintf("bound twice: %s has %d Scheduled events", name, n))
			}
		}
	}
	for i := 0; i < b.total; i++ {
		if !seen[i] {
			o.lost++
			o.details = append(o.details, "lost: "+b.podName(i)+" does not exist")
		}
	}
	return o
}

// live are the pods not being deleted.
func live(pods []v1.Pod) []v1.Pod {
	var out []v1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// judgeOriginals counts, for a burst of ReplicaSets, the original pods bound
// where they cannot run (the row's misplaced, as without healing), and the
// time from healFrom until the last index that ever had a pod bound where it
// cannot run had its pod at the end (pods) bound where it runs.
func (b *burst) judgeOriginals(o *outcome, pods []v1.Pod, runs func(int, string) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, name := range b.original {
		if node := b.node[name]; node != "" && !runs(i, node) {
			o.misplaced++
			o.details = append(o.details, fmt.Sprintf("misplaced when bound: %s (%s) on %s", name, b.image(i).About, node))
		}
	}
	wrong := map[int]bool{}
	for name, node := range b.node {
		if i, ok := b.index[name]; ok && !runs(i, node) {
			wrong[i] = true
		}
	}
	var last time.Time
	for i := range pods {
		p := &pods[i]
		idx, _ := indexOf(p)
		if at, ok := b.bound[p.Name]; ok && wrong[idx] && runs(idx, p.Spec.NodeName) && at.After(last) {
			last = at
		}
	}
	if !last.IsZero() {
		o.toHeal = max(0, last.Sub(b.healFrom))
	}
}

// waitWatched waits, a minute at most, until the watch has seen every bound
// pod of pods bound: after an apiserver or etcd restart, the watch reconnects
// with a backoff, and bind times are read from it.
func (b *burst) waitWatched(ctx context.Context, pods *[]v1.Pod) {
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		for i := range *pods {
			if p := &(*pods)[i]; p.Spec.NodeName != "" {
				if _, seen := b.bound[p.Name]; !seen {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// explained reports whether a Pending pod has an event saying why it waits:
// the scheduler's FailedScheduling (the failure policy keeps it Pending).
func (b *burst) explained(ctx context.Context, p *v1.Pod) bool {
	sel := fields.Set{"involvedObject.name": p.Name, "reason": "FailedScheduling"}.AsSelector().String()
	evs, err := env.Client.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	return err == nil && len(evs.Items) > 0
}

// checkHealed fails t for what o lost, left stuck, or left misplaced after
// healing.
func (o outcome) checkHealed(t *testing.T) {
	t.Helper()
	if o.lost+o.misplacedEnd+o.stuck > 0 {
		t.Errorf("%d pods: %d lost, %d misplaced at the end (after healing), %d stuck:\n  %s", o.pods, o.lost, o.misplacedEnd, o.stuck, strings.Join(o.details, "\n  "))
	}
}

// check fails t for what o lost, misplaced or left stuck.
func (o outcome) check(t *testing.T) {
	t.Helper()
	if o.lost+o.misplaced+o.stuck > 0 {
		t.Errorf("%d pods: %d lost, %d misplaced, %d stuck:\n  %s", o.pods, o.lost, o.misplaced, o.stuck, strings.Join(o.details, "\n  "))
	}
}

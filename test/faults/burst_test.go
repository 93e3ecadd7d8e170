//go:build !k8s1.35

package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	ggcrv1 "github.com/google/go-containerregistry/pkg/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

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

	created chan int
	done    chan struct{}
	err     error

	mu    sync.Mutex
	bound map[string]time.Time // pod name -> when the test saw it bound
	node  map[string]string
}

func newBurst(ns, scheduler string, total int) *burst {
	return &burst{ns: ns, scheduler: scheduler, total: total, interval: 50 * time.Millisecond, images: burstImages(),
		bound: map[string]time.Time{}, node: map[string]string{}}
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
		if !ok || p.Spec.NodeName == "" {
			return
		}
		b.mu.Lock()
		if _, seen := b.bound[p.Name]; !seen {
			b.bound[p.Name] = time.Now()
			b.node[p.Name] = p.Spec.NodeName
		}
		b.mu.Unlock()
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
				ObjectMeta: metav1.ObjectMeta{Name: b.podName(i), Namespace: b.ns, Labels: map[string]string{framework.LabelApp: "burst"}},
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
				_, last = env.Client.CoreV1().Pods(b.ns).Create(ctx, p, metav1.CreateOptions{})
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

// waitCreated blocks until n pods have been created (or the burst ended).
func (b *burst) waitCreated(n int) {
	for i := range b.created {
		if i >= n-1 {
			return
		}
	}
}

// firstBindAfter is the first bind the test saw after t, and the time from t to it.
func (b *burst) firstBindAfter(t time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var first time.Time
	for _, at := range b.bound {
		if at.After(t) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	if first.IsZero() {
		return 0, false
	}
	return first.Sub(t), true
}

// boundSince counts the pods bound after t, and when the last of them was.
func (b *burst) boundSince(t time.Time) (n int, last time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, at := range b.bound {
		if at.After(t) {
			n++
			if at.After(last) {
				last = at
			}
		}
	}
	return n, last
}

// outcome is what became of a burst's pods.
type outcome struct {
	pods, bound, explained, lost, misplaced, stuck int
	// details name the pods counted as lost, misplaced or stuck.
	details []string
}

// settle waits for the burst to end and every pod to be bound, or (unless
// bound is set) left Pending with an event that says why (FailedScheduling:
// the failure policy), for at most timeout; then it judges each pod. maxGated,
// when non-zero, is the placement mode's --max-gated: a pod still carrying its
// gate longer is stuck.
func (b *burst) settle(ctx context.Context, t *testing.T, timeout, maxGated time.Duration, bound bool) outcome {
	t.Helper()
	<-b.done
	if b.err != nil {
		t.Fatal(b.err)
	}
	var pods []v1.Pod
	defer b.waitWatched(ctx, &pods)
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(b.ns).List(ctx, metav1.ListOptions{LabelSelector: framework.LabelApp + "=burst"})
		if err != nil {
			return false, nil
		}
		pods = list.Items
		for i := range pods {
			if pods[i].Spec.NodeName == "" && (bound || !b.explained(ctx, &pods[i])) {
				return false, nil
			}
		}
		return len(pods) == b.total, nil
	})
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*v1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	images := map[string]framework.Image{}
	for i := 0; i < b.total; i++ {
		images[b.podName(i)] = b.image(i)
	}
	o := outcome{pods: b.total}
	seen := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		seen[p.Name] = true
		switch {
		case p.Spec.NodeName != "":
			o.bound++
			if n := byName[p.Spec.NodeName]; n == nil || !images[p.Name].RunsOn(n) {
				o.misplaced++
				o.details = append(o.details, fmt.Sprintf("misplaced: %s (%s) on %s", p.Name, images[p.Name].About, p.Spec.NodeName))
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
		if !seen[b.podName(i)] {
			o.lost++
			o.details = append(o.details, "lost: "+b.podName(i)+" does not exist")
		}
	}
	return o
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

// check fails t for what o lost, misplaced or left stuck.
func (o outcome) check(t *testing.T) {
	t.Helper()
	if o.lost+o.misplaced+o.stuck > 0 {
		t.Errorf("%d pods: %d lost, %d misplaced, %d stuck:\n  %s", o.pods, o.lost, o.misplaced, o.stuck, strings.Join(o.details, "\n  "))
	}
}

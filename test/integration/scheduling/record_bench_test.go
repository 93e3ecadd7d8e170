package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/kubernetes/test/integration/framework"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/decision"
)

// recordBenchPods is the burst of pods each arm binds: a Deployment scaled up.
const recordBenchPods = 300

// recordBenchWorkers bind in parallel, as kube-scheduler binds each pod in a
// goroutine of its own (its client's rate limiter then queues them).
const recordBenchWorkers = 16

// recordBenchNamespaces numbers the benchmark's namespaces.
var recordBenchNamespaces atomic.Int64

// recordArm is one way of binding a pod.
type recordArm struct {
	name string
	bind func(ctx context.Context, cs clientset.Interface, pod *v1.Pod, record string) error
}

var recordArms = []recordArm{
	{"bind", func(ctx context.Context, cs clientset.Interface, pod *v1.Pod, _ string) error {
		return cs.CoreV1().Pods(pod.Namespace).Bind(ctx, binding(pod, nil), metav1.CreateOptions{})
	}},
	// What a plugin recording its decision as the placement mode does would
	// add: one PATCH of the pod (after binding, as PostBind would).
	{"bind+patch", func(ctx context.Context, cs clientset.Interface, pod *v1.Pod, record string) error {
		if err := cs.CoreV1().Pods(pod.Namespace).Bind(ctx, binding(pod, nil), metav1.CreateOptions{}); err != nil {
			return err
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotations.Decision: record}}})
		if err != nil {
			return err
		}
		_, err = cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}},
	// The API server copies a Binding's annotations onto the pod, in the
	// same write: a record carried by the binding itself.
	{"bind-annotated", func(ctx context.Context, cs clientset.Interface, pod *v1.Pod, record string) error {
		return cs.CoreV1().Pods(pod.Namespace).Bind(ctx, binding(pod, map[string]string{annotations.Decision: record}), metav1.CreateOptions{})
	}},
}

func binding(pod *v1.Pod, ann map[string]string) *v1.Binding {
	return &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Annotations: ann},
		Target:     v1.ObjectReference{Kind: "Node", Name: "node-linux-amd64"},
	}
}

// BenchmarkDecisionRecordCost measures what recording the scheduler's decision
// on every pod it binds would cost, as the placement mode records its own
// (annotation archfilter.io/decision): a burst of recordBenchPods pods bound
// alone, bound and then patched once each, and bound by Bindings that carry
// the annotation, the arms in turn (their order rotating) on one real
// kube-apiserver and etcd. Twice: with an unthrottled client, where the API
// server's and etcd's work is the limit, and with kube-scheduler's default
// client settings (clientConnection qps 50, burst 100), where the client's
// rate limiter is. Each arm gets a new client, so each burst starts with a
// full bucket.
//
// It reports each arm's wall time per pod and its ratio to binding alone;
// docs/placement.md (the decision record) has the numbers and the choice
// they led to.
func BenchmarkDecisionRecordCost(b *testing.B) {
	server := kubeapiservertesting.StartTestServerOrDie(b, nil,
		[]string{"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority,StorageObjectInUseProtection"},
		framework.SharedEtcd())
	b.Cleanup(server.TearDownFn)
	admin := unthrottled(b, server.ClientConfig)
	ctx := context.Background()
	if _, err := admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-linux-amd64",
		Labels: map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64"}}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	rec, err := decision.Record{By: "archfilter-scheduler bench", At: metav1.Now(), Outcome: decision.OutcomeConstrained,
		Platforms: "linux/amd64,linux/arm64", Source: decision.SourceImages}.Encode()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		qps   float32
		burst int
	}{
		{"client=unthrottled", -1, 0},
		{"client=scheduler-default", 50, 100},
	} {
		b.Run(c.name, func(b *testing.B) {
			took := make([]time.Duration, len(recordArms))
			for i := range b.N {
				for j := range recordArms {
					k := (i + j) % len(recordArms)
					arm := recordArms[k]
					b.StopTimer()
					ns := fmt.Sprintf("record-%d", recordBenchNamespaces.Add(1)) // go test runs a benchmark with b.N=1 first
					pods := createPods(ctx, b, admin, ns, recordBenchPods)
					cfg := rest.CopyConfig(server.ClientConfig)
					cfg.QPS, cfg.Burst = c.qps, c.burst
					cs, err := clientset.NewForConfig(cfg)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					start := time.Now()
					if err := inParallel(pods, func(p *v1.Pod) error { return arm.bind(ctx, cs, p, rec) }); err != nil {
						b.Fatalf("%s: %v", arm.name, err)
					}
					took[k] += time.Since(start)
					b.StopTimer()
					checkBound(ctx, b, admin, arm.name, pods[len(pods)-1], rec)
					if err := admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
			perPod := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N*recordBenchPods) }
			for k, arm := range recordArms {
				b.ReportMetric(perPod(took[k]), arm.name+"-us/pod")
				if k > 0 {
					b.ReportMetric(float64(took[k])/float64(took[0]), arm.name+"/bind")
				}
			}
		})
	}
}

// unthrottled is an administrator's client without client-side rate limits.
func unthrottled(b *testing.B, base *rest.Config) clientset.Interface {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := clientset.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// createPods creates namespace ns and n unbound pods in it.
func createPods(ctx context.Context, b *testing.B, cs clientset.Interface, ns string, n int) []*v1.Pod {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i), Labels: map[string]string{"app": "web"}},
			Spec:       v1.PodSpec{SchedulerName: schedulerName, Containers: []v1.Container{{Name: "web", Image: "registry.example/web:1"}}},
		}
	}
	if err := inParallel(pods, func(p *v1.Pod) error {
		created, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err == nil {
			*p = *created
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return pods
}

// checkBound fails unless pod is bound and, for the arms that record, carries the record.
func checkBound(ctx context.Context, b *testing.B, cs clientset.Interface, arm string, pod *v1.Pod, record string) {
	got, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	want := record
	if arm == "bind" {
		want = ""
	}
	if got.Spec.NodeName == "" || got.Annotations[annotations.Decision] != want {
		b.Fatalf("%s: pod %s/%s: node %q, %s %q; want bound, with %q", arm, pod.Namespace, pod.Name,
			got.Spec.NodeName, annotations.Decision, got.Annotations[annotations.Decision], want)
	}
}

// inParallel calls f on every pod from recordBenchWorkers goroutines and
// returns the first error.
func inParallel(pods []*v1.Pod, f func(*v1.Pod) error) error {
	work := make(chan *v1.Pod)
	errs := make(chan error, len(pods))
	var wg sync.WaitGroup
	for range recordBenchWorkers {
		wg.Go(func() {
			for p := range work {
				if err := f(p); err != nil {
					errs <- fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
				}
			}
		})
	}
	for _, p := range pods {
		work <- p
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config/argsfile"
	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/placement"
	"github.com/archfilter/archfilter/pkg/registryclient"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// TestHotStandby: a standby's Warm resolves the images of the gated pods
// through the real resolver (an in-memory registry counts the requests) and
// writes nothing: no pod update, no event, only the informers' list and
// watch. When the replica then leads, its controller releases every pod with
// the affinity its images need and asks the registry nothing more.
func TestHotStandby(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reg := registrytest.NewMemory(t)
	f := reg.Fixtures(t)
	images := map[string]string{ // image -> the architecture its affinity must name
		f.Image("arm:v1", registrytest.OCI, "linux/arm64").Ref:                    "arm64",
		f.Index("multi:v1", registrytest.OCI, "linux/amd64", "linux/s390x").Ref:   "s390x",
		f.Image("amd:v1", registrytest.Docker, "linux/amd64").Ref:                 "amd64",
		f.Index("ppc:v1", registrytest.OCI, "linux/ppc64le", "linux/riscv64").Ref: "ppc64le",
	}
	argsPath := filepath.Join(t.TempDir(), "args.yaml")
	if err := os.WriteFile(argsPath, []byte(fmt.Sprintf("apiVersion: kubescheduler.config.k8s.io/v1\nkind: ArchFilterArgs\nfailurePolicy: Fail\nregistries:\n- host: %s\n  insecure: true\n", reg.Host())), 0o600); err != nil {
		t.Fatal(err)
	}
	args, err := argsfile.Load("--args", argsPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var objs []*v1.Pod
	i := 0
	for image := range images {
		for j := range 2 { // two pods of each image: one resolution each
			objs = append(objs, &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d-%d", i, j), CreationTimestamp: metav1.NewTime(now)},
				Spec: v1.PodSpec{
					Containers:      []v1.Container{{Name: "c", Image: image}},
					SchedulingGates: []v1.PodSchedulingGate{{Name: placement.GateName}},
				},
			})
		}
		i++
	}
	// Not asked for: a pod that declares its platforms, and one out of scope.
	objs = append(objs,
		&v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "declared", CreationTimestamp: metav1.NewTime(now), Annotations: map[string]string{annotations.Platforms: "linux/arm64"}},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: reg.Host() + "/declared:v1"}}, SchedulingGates: []v1.PodSchedulingGate{{Name: placement.GateName}}},
		},
		&v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "excluded", CreationTimestamp: metav1.NewTime(now)},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: reg.Host() + "/excluded:v1"}}, SchedulingGates: []v1.PodSchedulingGate{{Name: placement.GateName}}},
		})
	client := fake.NewClientset()
	for _, p := range objs {
		if err := client.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	windows := NewWindowsNodesFactory(client)
	rc, err := registryclient.New(ctx, args, client, factory)
	if err != nil {
		t.Fatal(err)
	}
	recorder := record.NewFakeRecorder(100)
	c, err := New(Options{
		Client: client, Informers: factory, WindowsNodes: windows.Core().V1().Nodes(), Recorder: recorder,
		Resolver: rc.Resolver, Credentials: rc.Credentials, Settings: settings(t, args),
		By: "test", MaxGated: time.Minute, Workers: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []informers.SharedInformerFactory{factory, windows} {
		f.Start(ctx.Done())
		f.WaitForCacheSync(ctx.Done())
	}
	reg.Requests.Reset()
	client.ClearActions()

	// The standby.
	warmCtx, stopWarm := context.WithCancel(ctx)
	warmed := make(chan error, 1)
	go func() { warmed <- c.Warm(warmCtx) }()
	// Until the resolver has an answer cached for every pod's images.
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, p := range objs[:2*len(images)] {
			if _, ok := rc.Resolver.Lookup(resolver.Request{Image: p.Spec.Containers[0].Image, Credentials: rc.Credentials.ForPod(p)}); !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the standby did not resolve every gated pod's images: %d registry requests", reg.Requests.Len())
	}
	// Warm returns once its workers have stopped: whatever it wrote is written.
	stopWarm()
	if err := <-warmed; err != nil {
		t.Fatalf("Warm: %v", err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("the standby wrote to the cluster: %s %s", a.GetVerb(), resourceOf(a))
		}
	}
	if n := len(recorder.Events); n > 0 {
		t.Errorf("the standby recorded %d events: %q", n, <-recorder.Events)
	}
	for _, p := range objs {
		got, err := client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !placement.HasGate(got) || got.Spec.Affinity != nil || got.Annotations[annotations.Decision] != "" {
			t.Errorf("pod %s changed under the standby: gate %v, affinity %v, annotations %v", p.Name, placement.HasGate(got), got.Spec.Affinity, got.Annotations)
		}
	}

	// It leads: every pod released as its images need, and no registry request.
	standbyRequests := reg.Requests.Len()
	go func() { _ = c.Run(ctx) }()
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range objs {
			got, err := client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || placement.HasGate(got) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal("the leader did not release every gated pod")
	}
	for _, p := range objs[:2*len(images)] {
		got, _ := client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if arch := images[p.Spec.Containers[0].Image]; got.Spec.Affinity == nil || !strings.Contains(got.Spec.Affinity.String(), arch) {
			t.Errorf("pod %s of %s: affinity %v, want one naming %s", p.Name, p.Spec.Containers[0].Image, got.Spec.Affinity, arch)
		}
	}
	if n := reg.Requests.Len() - standbyRequests; n != 0 {
		t.Errorf("the leader made %d registry requests after the standby resolved its pods' images, want 0: %v", n, reg.Requests.All()[standbyRequests:])
	}
	if standbyRequests == 0 {
		t.Error("the standby made no registry request: the check above proves nothing")
	}
}

func resourceOf(a clienttesting.Action) string {
	r := a.GetResource().Resource
	if s := a.GetSubresource(); s != "" {
		r += "/" + s
	}
	return r
}

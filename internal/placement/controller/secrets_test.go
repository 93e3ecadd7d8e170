package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/placement"
	"github.com/archfilter/archfilter/pkg/resolver"
	"github.com/archfilter/archfilter/pkg/resolver/credentials"
)

// refusing fails every image as a registry refusing the credentials would,
// naming them as a resolver's error does (they print their sources only).
type refusing struct{ tried []string }

func (r *refusing) Resolve(_ context.Context, req resolver.Request) resolver.Result {
	for _, c := range req.Credentials.For("r.example.com") {
		r.tried = append(r.tried, c.Source)
	}
	return resolver.Result{Err: fmt.Errorf("r.example.com: 401 Unauthorized with %v", req.Credentials)}
}

// TestMalformedPullSecretNeverLogged: a pod naming a pull secret with
// malformed data (its auth not base64) and a good one is decided with the good
// one; the broken one is logged by namespace/name, and its content appears in
// no log line and no event of the whole decision.
func TestMalformedPullSecretNeverLogged(t *testing.T) {
	const marker = "MARKER-s3cr3t-4b9e"
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(5)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	broken := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "broken", UID: "b"},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"r.example.com":{"auth":"` + marker + `!"}}}`)},
	}
	good := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "good", UID: "g"},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"r.example.com":{"username":"u","password":"p"}}}`)},
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", CreationTimestamp: metav1.Now()},
		Spec: v1.PodSpec{
			Containers:       []v1.Container{{Name: "c", Image: "r.example.com/app:1"}},
			ImagePullSecrets: []v1.LocalObjectReference{{Name: "broken"}, {Name: "good"}},
			SchedulingGates:  []v1.PodSchedulingGate{{Name: placement.GateName}},
		},
	}
	client := fake.NewClientset(pod, broken, good, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default"}})
	store, err := credentials.NewClientStore(ctx, client, credentials.Options{})
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	windows := NewWindowsNodesFactory(client)
	recorder := record.NewFakeRecorder(10)
	res := &refusing{}
	c, err := New(Options{
		Client: client, Informers: factory, WindowsNodes: windows.Core().V1().Nodes(), Recorder: recorder, Credentials: store, Resolver: res,
		Settings: settings(t, &config.ArchFilterArgs{FailurePolicy: config.FailurePolicyIgnore, MaxWait: metav1.Duration{Duration: time.Second}}),
		By:       "test", MaxGated: time.Minute,
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
	if want := "pod imagePullSecret ns/good"; len(res.tried) != 1 || res.tried[0] != want {
		t.Errorf("credentials tried %v, want only %s", res.tried, want)
	}
	var events []string
	for len(recorder.Events) > 0 {
		events = append(events, <-recorder.Events)
	}
	if len(events) == 0 {
		t.Fatal("no event")
	}
	log := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	if !strings.Contains(log, `secret="ns/broken"`) {
		t.Errorf("the broken secret is not logged by namespace/name:\n%s", log)
	}
	for _, out := range append(events, log) {
		if strings.Contains(out, marker) {
			t.Errorf("the malformed secret's content is printed:\n%s", out)
		}
	}
}

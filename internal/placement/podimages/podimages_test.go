package podimages

import (
	"context"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/pkg/resolver"
)

type podCredentials struct{ pod string }

func (c podCredentials) For(string) []resolver.Credential {
	return []resolver.Credential{{Source: "secret " + c.pod}}
}

type credentialsByPod struct{}

func (credentialsByPod) ForPod(pod *v1.Pod) resolver.Credentials {
	return podCredentials{pod: pod.Name}
}

// recorder answers every image with its own name as the digest and records
// what it was asked, with which credentials.
type recorder struct {
	mu    sync.Mutex
	asked map[string]string // image → credential source
}

func (r *recorder) Resolve(_ context.Context, req resolver.Request) resolver.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked[req.Image] = req.Credentials.For("any")[0].Source
	return resolver.Result{Digest: "digest of " + req.Image}
}

func TestResolveAsksForEveryImageOnceWithThePodsCredentials(t *testing.T) {
	pod := &v1.Pod{}
	pod.Name = "web"
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "r.example.com/init:v1"}}
	pod.Spec.Containers = []v1.Container{
		{Name: "app", Image: "r.example.com/app:v1"},
		{Name: "sidecar", Image: "r.example.com/app:v1"}, // asked once
	}
	r := &recorder{asked: map[string]string{}}
	lookup := Resolve(context.Background(), r, credentialsByPod{}, pod)

	if len(r.asked) != 2 {
		t.Errorf("asked the resolver for %v, want the 2 distinct images", r.asked)
	}
	for _, image := range []string{"r.example.com/init:v1", "r.example.com/app:v1"} {
		if got := r.asked[image]; got != "secret web" {
			t.Errorf("%s resolved with credentials %q, want the pod's (secret web)", image, got)
		}
		res, ok := lookup(image)
		if !ok || res.Digest != "digest of "+image {
			t.Errorf("lookup(%s) = %+v, %v; want the resolver's answer", image, res, ok)
		}
	}
	if _, ok := lookup("r.example.com/other:v1"); ok {
		t.Error("lookup answers an image the pod does not name")
	}
}

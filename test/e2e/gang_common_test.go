package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
	"github.com/archfilter/archfilter/test/e2e/framework"
)

// slowRegistry is a proxy in front of the public registry that answers the
// requests of one repository after a delay: a gang member whose image resolves
// seconds after its gang-mates'.
type slowRegistry struct {
	host string
	mu   sync.Mutex
	// answered is when the first delayed request was answered.
	answered time.Time
}

func newSlowRegistry(t *testing.T, repository string, delay time.Duration) *slowRegistry {
	t.Helper()
	upstream, err := url.Parse("http://" + env.Public.PushHost)
	if err != nil {
		t.Fatal(err)
	}
	s := &slowRegistry{}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/"+repository+"/") {
			time.Sleep(delay)
			defer func() {
				s.mu.Lock()
				if s.answered.IsZero() {
					s.answered = time.Now()
				}
				s.mu.Unlock()
			}()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.host = strings.TrimPrefix(srv.URL, "http://")
	return s
}

// gangRegistries are the registries a gang test's scheduler reaches over plain HTTP.
func gangRegistries(slow *slowRegistry) []any {
	var out []any
	for _, h := range []string{env.Public.PushHost, env.Private.PushHost, slow.host} {
		out = append(out, map[string]any{"host": h, "insecure": true})
	}
	return out
}

// gangMember is a member of a gang: its name and image.
type gangMember struct {
	name  string
	image framework.Image
	ref   string
}

// gangMembers are three pods of mixed images: two the registry answers at once,
// one behind the slow proxy (a fresh image, resolved by nobody before).
func gangMembers(ctx context.Context, t *testing.T, ns string, slow *slowRegistry) []gangMember {
	t.Helper()
	fresh := framework.Image{Name: "slow/" + ns, Tag: "v1", Index: true, Platforms: framework.ImageMultiArch.Platforms}
	if _, err := framework.Push(ctx, env.Public, fresh); err != nil {
		t.Fatal(err)
	}
	return []gangMember{
		{name: "multiarch", image: framework.ImageMultiArch, ref: framework.ImageMultiArch.Ref(env.Public, env.Private)},
		{name: "arm64-only", image: framework.ImageARM64Only, ref: framework.ImageARM64Only.Ref(env.Public, env.Private)},
		{name: "slow", image: fresh, ref: slow.host + "/" + fresh.Name + ":" + fresh.Tag},
	}
}

// holdGate keeps a gang's members out of the scheduler until all of them
// exist, as a job controller (Kueue, JobSet) releases a gang: the members are
// then seen together, and the one whose image is slow decides when they go.
const holdGate = "archfilter.io/e2e-gang-hold"

// createGang creates the members with holdGate, then removes it from all.
func createGang(ctx context.Context, t *testing.T, ns string, pods []*v1.Pod) {
	t.Helper()
	for _, p := range pods {
		p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: holdGate})
		if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		got, err := env.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Spec.SchedulingGates = nil
		if _, err := env.Client.CoreV1().Pods(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkGang waits for every member to be bound, on a node its image runs on,
// and none before the slow member's image was answered: the gang goes through
// together.
func checkGang(ctx context.Context, t *testing.T, ns string, members []gangMember, slow *slowRegistry) {
	t.Helper()
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, "", len(members), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		checkPlacement(ctx, t, ns, framework.LabelApp+"="+m.name, m.image)
	}
	slow.mu.Lock()
	answered := slow.answered
	slow.mu.Unlock()
	if answered.IsZero() {
		t.Fatal("the slow member's image was never asked for")
	}
	for _, m := range members {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, m.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.Conditions {
			// Conditions have a resolution of a second.
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionTrue && c.LastTransitionTime.Time.Before(answered.Truncate(time.Second)) {
				t.Errorf("member %s bound at %s, before the slow member's image was answered (%s)", m.name, c.LastTransitionTime.Time, answered)
			}
		}
	}
}

// checkHeldForGang reads the scheduler's log: its queue logs each PreEnqueue
// status (-v=5), so a member whose images were known and that waited for its
// gang at ArchFilter, not in Permit, left ReasonWaitingForGang there.
func checkHeldForGang(t *testing.T) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(framework.RepoRoot(), ".cache", "e2e", "logs", dnsName(t.Name()), "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err == nil && strings.Contains(string(b), archfilter.ReasonWaitingForGang) {
			return
		}
	}
	t.Errorf("no member was held for its gang at PreEnqueue (%q in %v)", archfilter.ReasonWaitingForGang, logs)
}

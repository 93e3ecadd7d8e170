package scheduling

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// images pushes one image of each kind the issue lists to reg.
type images struct {
	multiArch, amd64Only, arm64Only, windowsOnly, s390xIndex string
}

func pushImages(t *testing.T, reg *registrytest.Memory) images {
	f := reg.Fixtures(t)
	return images{
		multiArch:   f.Index("multi:v1", registrytest.OCI, "linux/amd64", "linux/arm64").Ref,
		amd64Only:   f.Image("amd64-only:v1", registrytest.Docker, "linux/amd64").Ref,
		arm64Only:   f.Image("arm64-only:v1", registrytest.OCI, "linux/arm64").Ref,
		windowsOnly: f.Index("windows-only:v1", registrytest.Docker, "windows/amd64:10.0.17763.6054").Ref,
		s390xIndex:  f.Attested("s390x-attested:v1", "linux/s390x").Ref,
	}
}

func TestImagesLandOnTheirPlatforms(t *testing.T) {
	reg := registrytest.NewMemory(t)
	img := pushImages(t, reg)
	c := startCluster(t, "failurePolicy: Fail", "")
	mixedNodes(c)

	for _, tc := range []struct {
		name   string
		images []string
		want   sets.Set[string]
	}{
		{name: "multi-arch", images: []string{img.multiArch}, want: sets.New("amd64", "arm64")},
		{name: "amd64-only", images: []string{img.amd64Only}, want: sets.New("amd64")},
		{name: "arm64-only", images: []string{img.arm64Only}, want: sets.New("arm64")},
		{name: "windows-only", images: []string{img.windowsOnly}, want: sets.New("windows")},
		// The attestation entry (unknown/unknown) must not count as a platform.
		{name: "s390x-with-attestation", images: []string{img.s390xIndex}, want: sets.New("s390x")},
		// A pod runs where all of its images run.
		{name: "multi-and-arm64", images: []string{img.multiArch, img.arm64Only}, want: sets.New("arm64")},
	} {
		c.pod(tc.name, tc.images)
	}
	for _, tc := range []struct {
		name string
		want sets.Set[string]
	}{
		{"multi-arch", sets.New("amd64", "arm64")},
		{"amd64-only", sets.New("amd64")},
		{"arm64-only", sets.New("arm64")},
		{"windows-only", sets.New("windows")},
		{"s390x-with-attestation", sets.New("s390x")},
		{"multi-and-arm64", sets.New("arm64")},
	} {
		if got := c.scheduledNode(tc.name); !tc.want.Has(got) {
			t.Errorf("pod %s scheduled to %s, want one of %v", tc.name, got, sets.List(tc.want))
		}
	}
	if evs := c.eventMessages("arm64-only", archfilter.EventResolved); len(evs) == 0 {
		t.Errorf("no %s event on a pod that waited for resolution%s", archfilter.EventResolved, c.describe("arm64-only"))
	}
}

// TestMessagesNameTheImage: what a person reads names the container and image that keeps
// the pod off a platform: the FailedScheduling message of a pod whose images share no
// platform, and, when no node can run the pod, the pod's ImagePlatformsResolved event,
// per node platform, while FailedScheduling counts the nodes in one clause, as
// upstream's plugins are counted. The event comes whether the pod waited for its
// images, found them cached, or declared its platforms.
func TestMessagesNameTheImage(t *testing.T) {
	reg := registrytest.NewMemory(t)
	img := pushImages(t, reg)
	f := reg.Fixtures(t)
	amdOrPPC := f.Index("amd64-or-ppc64le:v1", registrytest.OCI, "linux/amd64", "linux/ppc64le").Ref
	ppcOnly := f.Image("ppc64le-only:v1", registrytest.OCI, "linux/ppc64le").Ref
	c := startCluster(t, "failurePolicy: Fail", "")
	mixedNodes(c)

	c.pod("amd-and-arm", []string{img.amd64Only, img.arm64Only})
	msg := c.unschedulableMessage("amd-and-arm")
	t.Logf("amd-and-arm: %s", msg)
	if want := archfilter.ReasonNoCommonPlatform + `: container "c1" (` + img.arm64Only + `) runs on none of linux/amd64`; !strings.Contains(msg, want) {
		t.Errorf("message %q does not contain %q", msg, want)
	}

	// The pod runs on linux/ppc64le only, and the cluster has no such node: the four
	// nodes are one clause; the event names, per node platform, the first image
	// that does not run there. "ppc" waits for its images, "ppc-cached" finds them
	// cached, "ppc-declared" declares its platforms.
	c.pod("ppc", []string{amdOrPPC, ppcOnly})
	msg = c.unschedulableMessage("ppc")
	t.Logf("ppc: %s", msg)
	c.pod("ppc-cached", []string{amdOrPPC, ppcOnly})
	c.pod("ppc-declared", []string{noRegistry}, declared("linux/ppc64le"))
	clause := "0/4 nodes are available: 4 " + archfilter.ReasonPlatformMismatch + " (linux/ppc64le)."
	for _, name := range []string{"ppc", "ppc-cached", "ppc-declared"} {
		if name != "ppc" {
			msg = c.unschedulableMessage(name)
		}
		if !strings.HasPrefix(msg, clause) || strings.Count(msg, archfilter.ReasonPlatformMismatch) != 1 {
			t.Errorf("%s: message %q, want it to start %q, the only clause of ArchFilter's", name, msg, clause)
		}
	}
	images := `Images of the pod run on linux/ppc64le; on the cluster's other nodes: container "c1" (` + ppcOnly + `) does not run on linux/amd64; container "c0" (` + amdOrPPC + `) does not run on linux/arm64`
	declaredWant := `Images of the pod run on linux/ppc64le; on the cluster's other nodes: its annotation archfilter.io/platforms excludes linux/amd64, linux/arm64`
	for name, want := range map[string]string{"ppc": images, "ppc-cached": images, "ppc-declared": declaredWant} {
		var evs []string
		c.eventually(name+"'s "+archfilter.EventResolved+" event", func(context.Context) (bool, error) {
			evs = c.eventMessages(name, archfilter.EventResolved)
			return len(evs) > 0, nil
		})
		t.Logf("%s events: %q", name, evs)
		if len(evs) != 1 || !strings.HasPrefix(evs[0], want) {
			t.Errorf("%s: %s events %q, want one starting %q", name, archfilter.EventResolved, evs, want)
		}
	}
}

// TestUnreachableRegistry covers both failure policies for an image whose
// registry refuses connections.
func TestUnreachableRegistry(t *testing.T) {
	const unreachable = "127.0.0.1:1/app/unreachable:v1"
	t.Run("Ignore", func(t *testing.T) {
		c := startCluster(t, "failurePolicy: Ignore\nresolveTimeout: 2s", "")
		c.node("s390x", "linux", "s390x", "")
		c.pod("ignored", []string{unreachable})
		c.scheduledNode("ignored")
		c.eventually("fail-open event", func(context.Context) (bool, error) {
			return len(c.eventMessages("ignored", archfilter.EventFailOpen)) > 0, nil
		})
	})
	t.Run("Ignore-with-fallback", func(t *testing.T) {
		c := startCluster(t, "failurePolicy: Ignore\nresolveTimeout: 2s\nfallbackPlatforms: [linux/amd64]", "")
		c.node("s390x", "linux", "s390x", "")
		c.node("amd64", "linux", "amd64", "")
		c.pod("fallback", []string{unreachable})
		if got := c.scheduledNode("fallback"); got != "amd64" {
			t.Errorf("fallback pod on %s, want amd64", got)
		}
	})
	t.Run("Fail", func(t *testing.T) {
		c := startCluster(t, "failurePolicy: Fail\nresolveTimeout: 2s", "")
		c.node("amd64", "linux", "amd64", "")
		c.pod("failed", []string{unreachable})
		msg := c.unschedulableMessage("failed")
		for _, want := range []string{archfilter.ReasonResolutionFailed, unreachable, "127.0.0.1:1", "anonymous"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q does not mention %q", msg, want)
			}
		}
	})
}

// TestPrivateImageWithPullSecret resolves a private image with the pod's
// imagePullSecret and fails without it.
func TestPrivateImageWithPullSecret(t *testing.T) {
	reg := registrytest.NewMemory(t, registrytest.WithBasicAuth("puller", "s3cret", "private/*"))
	ref := reg.Fixtures(t).Image("private/app:v1", registrytest.OCI, "linux/arm64").Ref
	// A short negativeTTL: if the pod is resolved before the scheduler's secret
	// informer has the secret, the anonymous failure is retried within a second.
	c := startCluster(t, "failurePolicy: Fail\nresolveTimeout: 2s\ncache: {negativeTTL: 1s}", "")
	mixedNodes(c)

	auth := base64.StdEncoding.EncodeToString([]byte("puller:s3cret"))
	secret := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: c.ns},
		Type:       v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(fmt.Sprintf(
			`{"auths":{%q:{"auth":%q}}}`, reg.Host(), auth))},
	}
	if _, err := c.cs.CoreV1().Secrets(c.ns).Create(c.ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	c.pod("with-secret", []string{ref}, func(p *v1.Pod) {
		p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}}
	})
	if got := c.scheduledNode("with-secret"); got != "arm64" {
		t.Errorf("private arm64 image scheduled to %s, want arm64", got)
	}

	c.pod("without-secret", []string{ref})
	if msg := c.unschedulableMessage("without-secret"); !strings.Contains(msg, "Unauthorized") {
		t.Errorf("message %q should say the registry refused anonymous access", msg)
	}
}

// TestHeldPodIsReleasedByResolution holds a pod while its registry is slow
// and checks the scheduler did not spend a cycle on it before the answer.
func TestHeldPodIsReleasedByResolution(t *testing.T) {
	reg := registrytest.NewMemory(t)
	ref := reg.Fixtures(t).Image("slow/app:v1", registrytest.OCI, "linux/s390x").Ref
	release := make(chan struct{})
	reg.AddFault(registrytest.Fault{Method: "GET", Path: "/v2/slow/app/manifests/", Wait: release, Times: 1})
	c := startCluster(t, "failurePolicy: Fail\nresolveTimeout: 30s", "")
	mixedNodes(c)

	c.pod("held", []string{ref})
	c.eventually("waiting event", func(context.Context) (bool, error) {
		return len(c.eventMessages("held", archfilter.EventResolving)) > 0, nil
	})
	p, err := c.cs.CoreV1().Pods(c.ns).Get(c.ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Held at PreEnqueue: no scheduling attempt, so no PodScheduled condition.
	for _, cond := range p.Status.Conditions {
		if cond.Type == v1.PodScheduled {
			t.Errorf("held pod has a PodScheduled condition %+v: it was scheduled before its images resolved", cond)
		}
	}
	close(release)
	if got := c.scheduledNode("held"); got != "s390x" {
		t.Errorf("held pod scheduled to %s, want s390x", got)
	}
}

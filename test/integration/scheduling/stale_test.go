package scheduling

import (
	"context"
	"testing"
	"time"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// TestStaleAnswerDoesNotHold: once a tag's answer expires, a new pod of that
// image is scheduled at once with staleWhileRevalidate on, while the HEAD that
// refreshes the tag is still unanswered; with it off, the pod is held until
// the HEAD returns. Either way the registry sees that one HEAD: the setting
// saves the pod's wait, not requests.
func TestStaleAnswerDoesNotHold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		swr      string
		wantHeld bool
	}{
		{name: "on", swr: "1h", wantHeld: false},
		{name: "off", swr: "0s", wantHeld: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := registrytest.NewMemory(t)
			ref := reg.Fixtures(t).Image("app:v1", registrytest.OCI, "linux/s390x").Ref
			c := startCluster(t, "failurePolicy: Fail\ncache: {tagTTL: 1s, staleWhileRevalidate: "+tc.swr+"}", "")
			mixedNodes(c)
			c.pod("first", []string{ref})
			if got := c.scheduledNode("first"); got != "s390x" {
				t.Fatalf("first pod scheduled to %s, want s390x", got)
			}

			release := make(chan struct{})
			reg.AddFault(registrytest.Fault{Method: "HEAD", Path: "/v2/app/manifests/", Wait: release, Times: 1})
			reg.Requests.Reset()
			// What the test is about is the tag's TTL elapsing: there is no
			// event to wait for.
			time.Sleep(1500 * time.Millisecond)
			c.pod("second", []string{ref})

			if tc.wantHeld {
				c.eventually("the second pod held for the revalidation", func(context.Context) (bool, error) {
					return len(c.eventMessages("second", archfilter.EventResolving)) > 0, nil
				})
				close(release)
				if got := c.scheduledNode("second"); got != "s390x" {
					t.Errorf("second pod scheduled to %s, want s390x", got)
				}
			} else {
				// Scheduled while the HEAD is still blocked.
				if got := c.scheduledNode("second"); got != "s390x" {
					t.Errorf("second pod scheduled to %s, want s390x", got)
				}
				if msgs := c.eventMessages("second", archfilter.EventResolving); len(msgs) > 0 {
					t.Errorf("second pod was held: %q", msgs)
				}
				close(release)
			}
			c.eventually("one HEAD revalidating the tag", func(context.Context) (bool, error) {
				return reg.Requests.Count("HEAD", "/v2/app/manifests/") == 1, nil
			})
			if n := reg.Requests.Count("GET", "/v2/app/manifests/"); n != 0 {
				t.Errorf("%d manifest GETs after expiry; one HEAD should do", n)
			}
		})
	}
}

package kubectlplugin

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// TestCheckNarrowing: a digest of one platform's manifest, where a tag names the
// index that lists it, is warned about, found through the reference's own tag or the
// repository's tags; a refused tags list is named; an index digest is not a finding.
func TestCheckNarrowing(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)
	idx := f.Index("api:v1.2", registrytest.OCI, "linux/amd64", "linux/arm64")
	f.Image("api:old", registrytest.OCI, "linux/s390x")
	other := f.Index("other:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	amdChild := idx.ChildRef("linux/amd64")
	withTag := strings.Replace(amdChild, "@", ":v1.2@", 1)
	stdin := deployment("api", amdChild) + "---\n" + deployment("tagged", withTag) + "---\n" +
		deployment("index", idx.DigestRef()) + "---\n" + deployment("plain", idx.Ref) + "---\n" + deployment("refused", other.ChildRef("linux/arm64"))
	m.AddFault(registrytest.Fault{Path: "/v2/other/tags/list", Status: http.StatusNotFound,
		Body: []byte(`{"errors":[{"code":"UNSUPPORTED","message":"tags list disabled"}]}`)})
	stdout, stderr, code := run(t, stdin, "check", "-o", "json", "--insecure-registry", m.Host(), "-f", "-")
	if code != 0 {
		t.Errorf("exit status %d, want 0 (narrowing is a warning); stderr:\n%s", code, stderr)
	}
	var got struct{ Narrowing []narrowingView }
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, n := range got.Narrowing {
		lines = append(lines, n.Workload+" "+n.Result+" "+n.Platform+" "+n.Index+" "+strings.Join(n.IndexPlatforms, ","))
	}
	want := []string{
		"Deployment/shop/api narrowed linux/amd64 " + m.Host() + "/api:v1.2 linux/amd64,linux/arm64",
		"Deployment/shop/tagged narrowed linux/amd64 " + m.Host() + "/api:v1.2 linux/amd64,linux/arm64",
		"Deployment/shop/refused unknown linux/arm64  ",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("narrowing (-want,+got):\n%s", diff)
	}
	if len(got.Narrowing) == 3 {
		if msg := got.Narrowing[0].Message; !strings.Contains(msg, "pins "+shortDigest(idx.Children[0].Digest)+" (linux/amd64 manifest of index "+m.Host()+"/api:v1.2 with linux/amd64, linux/arm64): the pod runs on linux/amd64 only") {
			t.Errorf("message: %s", msg)
		}
		if msg := got.Narrowing[2].Message; !strings.Contains(msg, "could not be listed: NotFound, HTTP 404") {
			t.Errorf("refused tags list not named: %s", msg)
		}
	}
	// The reference's own tag is used: the tags list is not asked for.
	m.Requests.Reset()
	_, _, _ = run(t, deployment("tagged", withTag), "check", "-o", "json", "--insecure-registry", m.Host(), "-f", "-")
	if n := m.Requests.Count(http.MethodGet, "/v2/api/tags/list"); n != 0 {
		t.Errorf("tags listed %d times for a reference with a tag", n)
	}
	// The table shows them after the workloads.
	stdout, _, _ = run(t, deployment("api", amdChild), "check", "--insecure-registry", m.Host(), "-f", "-")
	if !hasLine(stdout, "Deployment/shop/api", "c0", "narrowed", "pins sha256:", "(linux/amd64 manifest of index", "runs on linux/amd64 only") {
		t.Errorf("table:\n%s", stdout)
	}
}

func TestTagVersions(t *testing.T) {
	cur, _ := parseTagVersion("v2")
	var got []string
	for _, v := range newerTags(cur, []string{"v1.9", "v2", "v2.0", "v2.3", "v2.10", "v2.4-rc1", "2.5", "v3.0", "latest", "v2.3.1"}) {
		got = append(got, v.tag)
	}
	if diff := cmp.Diff([]string{"v2.3", "v2.3.1", "v2.10", "v3.0"}, got); diff != "" {
		t.Errorf("newer than v2 (-want,+got):\n%s", diff)
	}
	alpine, _ := parseTagVersion("1.27-alpine")
	got = nil
	for _, v := range newerTags(alpine, []string{"1.28", "1.28-alpine", "1.26-alpine"}) {
		got = append(got, v.tag)
	}
	if diff := cmp.Diff([]string{"1.28-alpine"}, got); diff != "" {
		t.Errorf("newer than 1.27-alpine (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"latest", "v10", "v2.1", "v2", "main"}, likelyIndexTags([]string{"v2", "main", "latest", "v10", "v2.1"})); diff != "" {
		t.Errorf("likely index tags (-want,+got):\n%s", diff)
	}
}

// TestNewerTags: report and why suggest the oldest newer tag of the same major that
// adds the missing platform, and name a registry that refuses the tags list.
func TestNewerTags(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)
	api := f.Image("api:v2", registrytest.OCI, "linux/amd64")
	f.Image("api:v2.1", registrytest.OCI, "linux/amd64")
	f.Index("api:v2.3", registrytest.OCI, "linux/amd64", "linux/arm64")
	f.Index("api:v2.4", registrytest.OCI, "linux/amd64", "linux/arm64")
	f.Index("api:v3.0", registrytest.OCI, "linux/amd64", "linux/arm64")
	f.Image("api:v2.2-debug", registrytest.OCI, "linux/arm64")
	old := f.Image("old:v1", registrytest.OCI, "linux/amd64")
	f.Image("old:v1.1", registrytest.OCI, "linux/amd64")
	hidden := f.Image("hidden:v1", registrytest.OCI, "linux/amd64")
	latest := f.Image("latest:latest", registrytest.OCI, "linux/amd64")
	m.AddFault(registrytest.Fault{Path: "/v2/hidden/tags/list", Status: http.StatusUnauthorized,
		Body: []byte(`{"errors":[{"code":"UNAUTHORIZED","message":"no"}]}`)})
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "shop"} }
	client := fake.NewClientset(
		node("a1", "linux", "amd64"), node("r1", "linux", "arm64"),
		&appsv1.Deployment{ObjectMeta: meta("api"), Spec: appsv1.DeploymentSpec{Template: v1.PodTemplateSpec{Spec: podSpec(api.Ref, old.Ref, hidden.Ref, latest.Ref)}}},
		&v1.Pod{ObjectMeta: meta("api-pod"), Spec: podSpec(api.Ref)},
	)
	reg := &registryFlags{insecure: []string{m.Host()}, timeout: 10 * time.Second, newerTags: true}
	v, err := buildReport(context.Background(), client, "shop", reg, testDecider(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range v.NewerTags {
		got = append(got, n.Image+" "+n.Result+" "+n.Suggested+" "+strings.Join(n.Adds, ","))
	}
	want := []string{
		api.Ref + " found v2.3 linux/arm64",
		old.Ref + " none  ",
		hidden.Ref + " tagsRefused  ",
		latest.Ref + " notVersioned  ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("newer tags (-want,+got):\n%s", diff)
	}
	if len(v.NewerTags) == 4 {
		if msg := v.NewerTags[0].Message; msg != api.Ref+" runs on linux/amd64 only; v2.3 adds linux/arm64" {
			t.Errorf("message: %q", msg)
		}
		if msg := v.NewerTags[2].Message; !strings.Contains(msg, "refused the tags list of "+m.Host()+"/hidden (Unauthorized, HTTP 401") {
			t.Errorf("refused: %q", msg)
		}
		if n := v.NewerTags[0]; n.TagsListed != 6 || n.TagsRead != 4 {
			t.Errorf("tags listed %d, read %d; want 6 and 4 (v2.1, v2.3, v2.4, v3.0)", n.TagsListed, n.TagsRead)
		}
	}
	var csvOut strings.Builder
	if err := printReport(&csvOut, outputCSV, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(csvOut.String(), ",newer_tag\n") || !strings.Contains(csvOut.String(), ","+m.Host()+"/api:v2.3\n") {
		t.Errorf("csv lacks the newer tag:\n%s", csvOut.String())
	}

	// why names it for the pod.
	cs := fake.NewClientset(node("a1", "linux", "amd64"), node("r1", "linux", "arm64"), &v1.Pod{ObjectMeta: meta("api-pod"), Spec: podSpec(api.Ref)})
	w, err := explainPod(context.Background(), cs, "shop", "api-pod", reg, testDecider(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.NewerTags) != 1 || w.NewerTags[0].Suggested != "v2.3" {
		t.Errorf("why: newer tags %+v, want v2.3", w.NewerTags)
	}
}

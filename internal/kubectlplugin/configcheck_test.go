package kubectlplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ggcrv1 "github.com/google/go-containerregistry/pkg/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// configFixtures are indexes whose entries' configs agree with them or not.
type configFixtures struct {
	host string
	// honest's configs name what its index claims; lying's arm64 entry is the amd64
	// build; armv6 claims arm/v7 for an arm/v6 config, armBare for a config without a
	// variant; windows claims windows for a linux config.
	honest, lying, armv6, armBare, windows registrytest.Pushed
	// big's config is over the resolver's 4 MiB limit; single has no index.
	big, single registrytest.Pushed
}

func pushConfigFixtures(t *testing.T, m *registrytest.Memory) configFixtures {
	t.Helper()
	f := m.Fixtures(t)
	return configFixtures{
		host:    m.Host(),
		honest:  f.Index("honest:v1", registrytest.OCI, "linux/amd64", "linux/arm64"),
		lying:   f.Mislabelled("lying:v1", registrytest.Claim{Index: "linux/amd64", Config: "linux/amd64"}, registrytest.Claim{Index: "linux/arm64", Config: "linux/amd64"}),
		armv6:   f.Mislabelled("armv6:v1", registrytest.Claim{Index: "linux/arm/v7", Config: "linux/arm/v6"}),
		armBare: f.Mislabelled("arm-bare:v1", registrytest.Claim{Index: "linux/arm/v7", Config: "linux/arm"}),
		windows: f.Mislabelled("windows:v1", registrytest.Claim{Index: "windows/amd64", Config: "linux/amd64"}),
		big:     f.OversizedConfig("big:v1", "linux/arm64", 4<<20),
		single:  f.Image("single:v1", registrytest.OCI, "linux/arm64"),
	}
}

// configOf is the config digest of a pushed index's child i.
func configOf(t *testing.T, m *registrytest.Memory, p registrytest.Pushed, i int) string {
	t.Helper()
	repo := strings.TrimPrefix(p.Repository, m.Host()+"/")
	body, _ := m.Fixtures(t).Manifest(repo + "@" + p.Children[i].Digest)
	var mf ggcrv1.Manifest
	if err := json.Unmarshal(body, &mf); err != nil {
		t.Fatal(err)
	}
	return mf.Config.Digest.String()
}

type inspectConfigsJSON struct {
	Images []struct {
		Image   string
		Error   string
		Configs []configCheck
	}
}

func runInspectConfigs(t *testing.T, args ...string) (inspectConfigsJSON, string, int) {
	t.Helper()
	stdout, stderr, code := run(t, "", append([]string{"inspect", "-o", "json"}, args...)...)
	var got inspectConfigsJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("decoding -o json: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	return got, stderr, code
}

// configSummary is one check as "platform result: message", with "CONFIG" for the
// config's short digest where the message names it.
func configSummary(c configCheck) string {
	msg := c.Message
	if c.Config != "" {
		short := shortDigest(c.Config)
		msg = strings.NewReplacer("("+short+")", "(CONFIG)", "config "+short+":", "config CONFIG:").Replace(msg)
	}
	return c.Platform + " " + c.Result + ": " + msg
}

// TestInspectConfigs: inspect reads each platform's config and flags those that
// contradict their index entry, with exit status 1.
func TestInspectConfigs(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushConfigFixtures(t, m)
	for _, tc := range []struct {
		name  string
		image registrytest.Pushed
		want  []string
		code  int
	}{
		{name: "configs agree", image: fx.honest, want: []string{
			"linux/amd64 ok: the index and its config (CONFIG) say linux/amd64",
			"linux/arm64 ok: the index and its config (CONFIG) say linux/arm64",
		}},
		{name: "arm64 entry whose config says amd64", image: fx.lying, code: ExitFailed, want: []string{
			"linux/amd64 ok: the index and its config (CONFIG) say linux/amd64",
			"linux/arm64 mismatch: the index claims linux/arm64 but its config (CONFIG) says linux/amd64",
		}},
		{name: "variant", image: fx.armv6, code: ExitFailed, want: []string{
			"linux/arm/v7 mismatch: the index claims linux/arm/v7 but its config (CONFIG) says linux/arm/v6",
		}},
		{name: "a config without variant does not contradict", image: fx.armBare, want: []string{
			"linux/arm/v7 ok: the index and its config (CONFIG) say linux/arm/v7",
		}},
		{name: "os", image: fx.windows, code: ExitFailed, want: []string{
			"windows/amd64 mismatch: the index claims windows/amd64 but its config (CONFIG) says linux/amd64",
		}},
		{name: "config over the size limit", image: fx.big, code: ExitInputError, want: []string{
			"linux/arm64 notChecked: linux/arm64: not checked: config CONFIG: InvalidManifest: config " + configOf(t, m, fx.big, 0) + " is ",
		}},
		{name: "single image: its platform is its config's", image: fx.single},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, stderr, code := runInspectConfigs(t, "--insecure-registry", fx.host, tc.image.Ref)
			if code != tc.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if len(got.Images) != 1 || len(got.Images[0].Configs) != len(tc.want) {
				t.Fatalf("got %+v, want %d config checks", got, len(tc.want))
			}
			for i, c := range got.Images[0].Configs {
				if s := configSummary(c); !strings.HasPrefix(s, tc.want[i]) {
					t.Errorf("check %d:\n got %s\nwant %s", i, s, tc.want[i])
				}
				if c.Digest != tc.image.Children[i].Digest || c.Config != configOf(t, m, tc.image, i) {
					t.Errorf("check %d names manifest %s and config %s, want the entry's", i, c.Digest, c.Config)
				}
			}
		})
	}
	t.Run("oversized config names the limit", func(t *testing.T) {
		got, _, _ := runInspectConfigs(t, "--insecure-registry", fx.host, fx.big.Ref)
		if msg := got.Images[0].Configs[0].Message; !strings.Contains(msg, "more than the limit of 4194304") {
			t.Errorf("message %q does not name the limit", msg)
		}
	})
	t.Run("table", func(t *testing.T) {
		stdout, stderr, code := run(t, "", "inspect", "--insecure-registry", fx.host, fx.lying.Ref, fx.honest.Ref)
		if code != ExitFailed || !hasLine(stdout, fx.lying.Ref, "mismatch", "the index claims linux/arm64 but its config (") ||
			!strings.Contains(stderr, "1 platform configs contradict their index") {
			t.Errorf("exit status %d, want %d, the mismatch in the table and the count on stderr:\n%s\n%s", code, ExitFailed, stdout, stderr)
		}
		if strings.Count(stdout, "CONFIG CHECK") != 1 || hasLine(stdout, fx.honest.Ref, " ok ") {
			t.Errorf("the table lists the checks that fail only:\n%s", stdout)
		}
		stdout, _, code = run(t, "", "inspect", "--insecure-registry", fx.host, fx.honest.Ref)
		if code != 0 || strings.Contains(stdout, "CONFIG CHECK") {
			t.Errorf("configs that agree: exit status %d and no config table wanted:\n%s", code, stdout)
		}
	})
	t.Run("--check-config=false reads the index only", func(t *testing.T) {
		m.Requests.Reset()
		got, _, code := runInspectConfigs(t, "--insecure-registry", fx.host, "--check-config=false", fx.lying.Ref)
		if code != 0 || len(got.Images[0].Configs) != 0 {
			t.Errorf("exit status %d, configs %+v: want 0 and none", code, got.Images[0].Configs)
		}
		if n := m.Requests.Count(http.MethodGet, "/v2/lying/blobs/"); n != 0 {
			t.Errorf("%d config blobs read", n)
		}
	})
	t.Run("one config per platform", func(t *testing.T) {
		m.Requests.Reset()
		_, _, _ = runInspectConfigs(t, "--insecure-registry", fx.host, fx.lying.Ref)
		if n := m.Requests.Count(http.MethodGet, "/v2/lying/blobs/"); n != 2 {
			t.Errorf("%d config blobs read, want 2", n)
		}
	})
}

// TestInspectConfigRefused: a config, or an entry's manifest, the registry refuses is
// named with the reason, never taken as agreeing; the exit status is 2.
func TestInspectConfigRefused(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushConfigFixtures(t, m)
	cfg := configOf(t, m, fx.lying, 1)
	for _, tc := range []struct {
		status int
		path   string
		want   string
	}{
		{http.StatusUnauthorized, "/v2/lying/blobs/" + cfg, "config CONFIG: Unauthorized, HTTP 401, anonymous credentials: GET /v2/lying/blobs/" + cfg + ": HTTP 401"},
		{http.StatusForbidden, "/v2/lying/blobs/" + cfg, "config CONFIG: Unauthorized, HTTP 403, anonymous credentials"},
		{http.StatusNotFound, "/v2/lying/blobs/" + cfg, "config CONFIG: NotFound, HTTP 404: GET /v2/lying/blobs/" + cfg + ": HTTP 404"},
		{http.StatusServiceUnavailable, "/v2/lying/blobs/" + cfg, "config CONFIG: Unreachable, HTTP 503"},
		{http.StatusNotFound, "/v2/lying/manifests/" + fx.lying.Children[1].Digest, "manifest " + shortDigest(fx.lying.Children[1].Digest) + ": NotFound, HTTP 404"},
	} {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.path), func(t *testing.T) {
			remove := m.AddFault(registrytest.Fault{Path: tc.path, Status: tc.status, Method: http.MethodGet})
			defer remove()
			got, stderr, code := runInspectConfigs(t, "--insecure-registry", fx.host, fx.lying.Ref)
			if code != ExitInputError || !strings.Contains(stderr, "1 config checks could not be answered") {
				t.Errorf("exit status %d, want %d and the count on stderr:\n%s", code, ExitInputError, stderr)
			}
			if n := len(got.Images[0].Configs); n != 2 {
				t.Fatalf("%d checks, want 2", n)
			}
			if c := got.Images[0].Configs[1]; c.Result != configNotChecked || !strings.Contains(configSummary(c), "linux/arm64: not checked: "+tc.want) {
				t.Errorf("got %s\nwant it to hold %s", configSummary(c), tc.want)
			}
			if c := got.Images[0].Configs[0]; c.Result != configOK {
				t.Errorf("the amd64 entry: %s, want ok", configSummary(c))
			}
		})
	}
}

// TestInspectConfigBound: an index of more than maxConfigChecks platforms has the
// configs of the first maxConfigChecks read, and the others named as not checked.
func TestInspectConfigBound(t *testing.T) {
	m := registrytest.NewMemory(t)
	wide := m.Fixtures(t).WideIndex("wide:v1", maxConfigChecks+1)
	m.Requests.Reset()
	got, _, code := runInspectConfigs(t, "--insecure-registry", m.Host(), wide.Ref)
	if code != ExitInputError {
		t.Errorf("exit status %d, want %d", code, ExitInputError)
	}
	results := map[string]int{}
	for _, c := range got.Images[0].Configs {
		results[c.Result]++
	}
	if diff := cmp.Diff(map[string]int{configMismatch: maxConfigChecks, configNotChecked: 1}, results); diff != "" {
		t.Errorf("results (-want,+got):\n%s", diff)
	}
	last := got.Images[0].Configs[maxConfigChecks]
	if want := fmt.Sprintf("the index lists %d platforms, and the configs of the first %d only are read", maxConfigChecks+1, maxConfigChecks); !strings.Contains(last.Message, want) {
		t.Errorf("last check %q, want it to say %q", last.Message, want)
	}
	if n := m.Requests.Count(http.MethodGet, "/v2/wide/blobs/"); n != maxConfigChecks {
		t.Errorf("%d config blobs read, want %d", n, maxConfigChecks)
	}
}

// TestCheckConfigs: check flags, per workload and container, the platforms whose
// config contradicts their index.
func TestCheckConfigs(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushConfigFixtures(t, m)
	stdin := deployment("web", fx.honest.Ref, fx.single.Ref) + "---\n" + deployment("liar", fx.lying.Ref)
	stdout, stderr, code := run(t, stdin, "check", "-o", "json", "--insecure-registry", fx.host, "-f", "-")
	if code != ExitFailed || !strings.Contains(stderr, "1 platform configs contradict their index") {
		t.Errorf("exit status %d, want %d and the count on stderr:\n%s", code, ExitFailed, stderr)
	}
	var got struct {
		Workloads []workloadView
		Configs   []configCheck
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range got.Configs {
		lines = append(lines, c.Workload+" "+c.Container+" "+c.Platform+" "+c.Result)
	}
	want := []string{
		"Deployment/shop/web c0 linux/amd64 ok", "Deployment/shop/web c0 linux/arm64 ok",
		"Deployment/shop/liar c0 linux/amd64 ok", "Deployment/shop/liar c0 linux/arm64 mismatch",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("config checks (-want,+got):\n%s", diff)
	}

	stdout, _, code = run(t, stdin, "check", "--insecure-registry", fx.host, "-f", "-")
	if code != ExitFailed || !hasLine(stdout, "Deployment/shop/liar", "c0", fx.lying.Ref, "mismatch", "the index claims linux/arm64 but its config (") ||
		hasLine(stdout, "Deployment/shop/web", "c0", fx.honest.Ref, "ok") {
		t.Errorf("exit status %d; the table should list the mismatch only:\n%s", code, stdout)
	}

	// A refused config leaves the check unanswered.
	remove := m.AddFault(registrytest.Fault{Path: "/v2/lying/blobs/" + configOf(t, m, fx.lying, 1), Status: http.StatusForbidden})
	_, stderr, code = run(t, deployment("liar", fx.lying.Ref), "check", "--insecure-registry", fx.host, "-f", "-")
	remove()
	if code != ExitInputError || !strings.Contains(stderr, "1 config checks could not be answered") {
		t.Errorf("refused config: exit status %d, want %d:\n%s", code, ExitInputError, stderr)
	}

	// Without the check, no configs key, and the workload passes.
	stdout, _, code = run(t, deployment("liar", fx.lying.Ref), "check", "-o", "json", "--check-config=false", "--insecure-registry", fx.host, "-f", "-")
	if code != 0 || strings.Contains(stdout, `"configs"`) {
		t.Errorf("--check-config=false: exit %d, output:\n%s", code, stdout)
	}
}

// TestConfigWitness: report --running's evidence for an exec format error names the
// entry of the node's platform whose config says another, or why it was not read.
func TestConfigWitness(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushConfigFixtures(t, m)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	reg := &registryFlags{insecure: []string{fx.host}, timeout: 10 * time.Second}
	w := newConfigWitness(reg, fake.NewClientset())
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop"}}
	cfg := shortDigest(configOf(t, m, fx.lying, 1))
	for _, tc := range []struct {
		name  string
		image string
		node  *v1.Node
		want  string
	}{
		{"the node's entry lies", fx.lying.Ref, node("r1", "linux", "arm64"), "; the index claims linux/arm64 but its config (" + cfg + ") says linux/amd64"},
		{"the node's entry is honest", fx.lying.Ref, node("a1", "linux", "amd64"), ""},
		{"node unknown: every entry that lies", fx.lying.Ref, nil, "; the index claims linux/arm64 but its config (" + cfg + ") says linux/amd64"},
		{"honest index", fx.honest.Ref, node("r1", "linux", "arm64"), ""},
		{"no index", fx.single.Ref, node("r1", "linux", "arm64"), ""},
		{"oversized config", fx.big.Ref, node("r1", "linux", "arm64"), "; config check of linux/arm64: not checked: config " + shortDigest(configOf(t, m, fx.big, 0)) + ": InvalidManifest: "},
		{"missing image", fx.host + "/missing:v1", node("r1", "linux", "arm64"), "; its config was not checked: NotFound, HTTP 404"},
		{"no image", "", node("r1", "linux", "arm64"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := w.evidence(context.Background(), pod, tc.image, tc.node)
			if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
				t.Errorf("evidence %q, want it to start with %q", got, tc.want)
			}
		})
	}
	// Each image is read once.
	m.Requests.Reset()
	_ = w.evidence(context.Background(), pod, fx.lying.Ref, node("r1", "linux", "arm64"))
	if n := m.Requests.Len(); n != 0 {
		t.Errorf("%d requests for an image already read", n)
	}
}

// TestRunningConfigEvidence: report --running adds, to an exec format error, what the
// config of the node's platform says when it contradicts the index.
func TestRunningConfigEvidence(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushConfigFixtures(t, m)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	failing := func(name, nodeName, image string) *v1.Pod {
		spec := podSpec(image)
		spec.NodeName = nodeName
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name)}, Spec: spec,
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c0",
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					Reason: "StartError", ExitCode: 128, Message: `exec: "/app": exec format error`}}}}}}
	}
	// The pod runs the lying index that moved:v1 named when it started; the tag now
	// names an honest one. The image that runs is the one whose configs are read.
	f := m.Fixtures(t)
	ran := f.Mislabelled("moved:old", registrytest.Claim{Index: "linux/amd64", Config: "linux/amd64"}, registrytest.Claim{Index: "linux/arm64", Config: "linux/amd64"})
	moved := failing("moved", "r1", f.Index("moved:v1", registrytest.OCI, "linux/amd64", "linux/arm64").Ref)
	moved.Status.ContainerStatuses[0].ImageID = ran.DigestRef()
	client := fake.NewClientset(node("a1", "linux", "amd64"), node("r1", "linux", "arm64"),
		failing("on-arm", "r1", fx.lying.Ref), failing("on-amd", "a1", fx.lying.Ref), failing("honest", "r1", fx.honest.Ref), moved)
	reg := &registryFlags{insecure: []string{fx.host}, timeout: 10 * time.Second}
	v, err := buildRunning(context.Background(), client, "shop", reg, testDecider(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := shortDigest(configOf(t, m, fx.lying, 1))
	got := map[string]string{}
	for _, r := range v.Findings {
		if r.Finding == "exec-format-error" {
			// The config's word comes last, after the status's (and what package
			// misplaced adds to it).
			got[r.Pod] = ""
			if i := strings.Index(r.Evidence, "; the index claims"); i >= 0 {
				got[r.Pod] = r.Evidence[i+2:]
			}
		}
	}
	want := map[string]string{
		"on-arm": "the index claims linux/arm64 but its config (" + cfg + ") says linux/amd64",
		"on-amd": "",
		"honest": "",
		"moved":  "the index claims linux/arm64 but its config (" + shortDigest(configOf(t, m, ran, 1)) + ") says linux/amd64",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config evidence of exec format errors (-want,+got):\n%s", diff)
	}
	var table strings.Builder
	printRunningTable(&table, v)
	if !hasLine(table.String(), "on-arm", "exec-format-error", "exec format error", "; the index claims linux/arm64 but its config") {
		t.Errorf("the table lacks the evidence:\n%s", table.String())
	}
}

package scheduling

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	ggcrv1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/archfilter/archfilter/internal/exechdr/exechdrtest"
	"github.com/archfilter/archfilter/internal/kubectlplugin"
	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

var updateDocs = flag.Bool("update", false,
	"rewrite the kubectl archfilter outputs in docs/kubectl-plugin.md and README.md with this run's (TestKubectlPlugin)")

// The private registry's one account, and the pull secret in the shop namespace that
// holds it.
const (
	pullUser     = "puller"
	pullPassword = "s3cret"
	pullSecret   = "regcred"
	shop         = "shop"
	// unreachable refuses connections: nothing listens on port 1.
	unreachable = "127.0.0.1:1/shop/gone:v1"
)

// shopImages are the scenario's images: in a public Distribution registry the shop's
// multi-arch web image, the mesh's amd64-only proxy (the single-arch sidecar), an agent
// built by buildx with attestations and a Helm chart; in a private one (htpasswd) the
// shop's arm64-only API.
type shopImages struct {
	pub, priv                     string // registry hosts
	web, proxy, agent, chart, api string
	// webAMD64 pins web's linux/amd64 manifest by digest (a narrowing pin); server is
	// an index whose linux/arm64 entry holds an x86-64 binary (a lying image); relay's
	// linux/arm64 entry is the linux/amd64 build, config and all.
	webAMD64, server, relay string
}

// TestKubectlPlugin runs kubectl archfilter's four commands as main does, through a
// kubeconfig, against a real apiserver whose pods the real scheduler with ArchFilter
// placed (or recorded why it could not), and two real CNCF Distribution registries,
// one of them private. Each command's table output is compared with the blocks of
// docs/kubectl-plugin.md and README.md marked <!-- golden: NAME -->, which -update
// rewrites: the documented output is this test's.
func TestKubectlPlugin(t *testing.T) {
	img := pushShopImages(t)
	c := startClusterWith(t, "failurePolicy: Fail\nresolveTimeout: 5s", "", func(ctx context.Context, cs clientset.Interface) {
		createShop(t, ctx, cs, img)
		createMisplaced(t, ctx, cs, img)
	})
	kubeconfig := writeKubeconfig(t, c.config)
	// The scheduler has decided about checkout once it says why it cannot place it.
	c.eventually("FailedScheduling of shop/checkout", func(ctx context.Context) (bool, error) {
		evs, err := c.cs.EventsV1().Events(shop).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == "checkout" && e.Reason == "FailedScheduling" {
				return true, nil
			}
		}
		return false, nil
	})

	noCredentials := t.TempDir()
	ciCredentials := dockerConfigDir(t, img.priv)
	manifestDir := t.TempDir()
	manifest := shopManifest(img)
	if err := os.WriteFile(filepath.Join(manifestDir, "shop.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	pinned := pinnedManifest(img)
	if err := os.WriteFile(filepath.Join(manifestDir, "pinned.yaml"), []byte(pinned), 0o644); err != nil {
		t.Fatal(err)
	}
	lint := lintManifest(img)
	if err := os.WriteFile(filepath.Join(manifestDir, "lint.yaml"), []byte(lint), 0o644); err != nil {
		t.Fatal(err)
	}
	docs := docFiles(t)
	// check reads shop.yaml as a CI job would, from its working directory.
	t.Chdir(manifestDir)
	k := &kubectl{kubeconfig: kubeconfig}

	golden := map[string]string{"shop.yaml": manifest, "pinned.yaml": pinned, "lint.yaml": lint}
	for _, g := range []struct {
		name string
		// dockerConfig is the DOCKER_CONFIG the command runs with.
		dockerConfig string
		args         []string
		want         int
	}{
		// Credentials for the private image come from the cluster's pull secret; the
		// unreachable registry's image is an error of its own, the others are listed.
		{"inspect", noCredentials, []string{"inspect", "--pull-secret", shop + "/" + pullSecret,
			img.web, img.agent, img.chart, img.api, unreachable}, kubectlplugin.ExitInputError},
		{"inspect-yaml", noCredentials, []string{"inspect", "-o", "yaml", img.agent}, 0},
		// The arm64 entry of tools/server holds the amd64 build.
		{"inspect-deep", noCredentials, []string{"inspect", "--deep", img.server}, kubectlplugin.ExitFailed},
		// The arm64 entry of tools/relay has the amd64 build's config.
		{"inspect-config", noCredentials, []string{"inspect", img.relay}, kubectlplugin.ExitFailed},
		// A CI job: the private registry's credentials are in its docker config.
		{"check", ciCredentials, []string{"check", "-f", "shop.yaml", "--platforms", "linux/amd64,linux/arm64"}, kubectlplugin.ExitFailed},
		{"check-affinity", ciCredentials, []string{"check", "-f", "shop.yaml", "--emit-affinity"}, kubectlplugin.ExitFailed},
		// A dependency bot pinned web's linux/amd64 manifest, not its index.
		{"check-narrowing", ciCredentials, []string{"check", "-f", "pinned.yaml"}, 0},
		// Mistakes in archfilter.io/ annotations, as the scheduler's events say them.
		{"check-lint", ciCredentials, []string{"check", "-f", "lint.yaml"}, kubectlplugin.ExitFailed},
		// The pod's own pull secret reads the private image.
		{"why", noCredentials, []string{"why", "-n", shop, "checkout"}, kubectlplugin.ExitFailed},
		// A pod the default scheduler left on a node that cannot run it: the verdict and
		// the exit status report --running gives it.
		{"why-running", noCredentials, []string{"why", "-n", billing, "invoices-6b7c9-k2x4q"}, kubectlplugin.ExitFailed},
		{"report", noCredentials, []string{"report", "-n", shop}, kubectlplugin.ExitInputError},
		{"report-wide", noCredentials, []string{"report", "-n", shop, "-o", "wide"}, kubectlplugin.ExitInputError},
		{"report-csv", noCredentials, []string{"report", "-n", shop, "-o", "csv"}, kubectlplugin.ExitInputError},
		// Pods the default scheduler placed before archfilter was installed.
		{"report-running", noCredentials, []string{"report", "--running", "-n", billing}, kubectlplugin.ExitFailed},
		{"report-running-csv", noCredentials, []string{"report", "--running", "-n", billing, "-o", "csv"}, kubectlplugin.ExitFailed},
	} {
		r := k.run(t, g.dockerConfig, g.args...)
		if r.code != g.want {
			t.Errorf("%s: exit status %d, want %d\n%s", g.name, r.code, g.want, r.transcript)
		}
		golden[g.name] = r.transcript
	}
	checkDocs(t, docs, golden)

	t.Run("inspect: credentials from the cluster, per-item errors", func(t *testing.T) {
		r := k.run(t, noCredentials, "inspect", img.api, img.web)
		if r.code != kubectlplugin.ExitInputError || !strings.Contains(r.stderr, img.api) || !strings.Contains(r.stderr, "Unauthorized") {
			t.Errorf("without --pull-secret: want exit status 2 and Unauthorized for %s\n%s", img.api, r.transcript)
		}
		if !hasRow(r.stdout, img.web, "index", "linux/amd64,linux/arm64") {
			t.Errorf("without --pull-secret: the public image is not listed\n%s", r.transcript)
		}
		r = k.run(t, noCredentials, "inspect", "--pull-secret", shop+"/"+pullSecret, unreachable, img.api)
		if r.code != kubectlplugin.ExitInputError || !strings.Contains(r.stderr, "127.0.0.1:1") || !hasRow(r.stdout, img.api, "image", "linux/arm64") {
			t.Errorf("want the private image listed, the unreachable one an error and exit status 2\n%s", r.transcript)
		}
		r = k.run(t, noCredentials, "inspect", "--pull-secret", shop+"/missing", img.web)
		if r.code != 0 || !strings.Contains(r.stderr, "warning: credentials") {
			t.Errorf("a missing pull secret is a warning, the public image still resolves\n%s", r.transcript)
		}
	})

	t.Run("why -o json", func(t *testing.T) {
		r := k.run(t, noCredentials, "why", "-n", shop, "checkout", "-o", "json")
		var why struct {
			Platforms struct {
				Platforms []struct{ Architecture string }
			}
			Blocking string
			Images   []struct{ Container, Error string }
			Nodes    []struct {
				Platform string
				Nodes    int
				CanRun   bool
			}
			Events []struct{ Reason, Message string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &why); err != nil {
			t.Fatalf("%v\n%s", err, r.transcript)
		}
		if r.code != kubectlplugin.ExitFailed || len(why.Platforms.Platforms) != 0 || !strings.Contains(why.Blocking, `container "mesh"`) {
			t.Errorf("want exit status 1, no platform and the mesh container named\n%s", r.transcript)
		}
		for _, i := range why.Images {
			if i.Error != "" {
				t.Errorf("%s: %s (the pod's pull secret should have read it)", i.Container, i.Error)
			}
		}
		if diff := cmp.Diff(`[{linux/amd64 1 false} {linux/arm64 2 false}]`, fmt.Sprint(why.Nodes)); diff != "" {
			t.Errorf("nodes (-want,+got):\n%s", diff)
		}
		if len(why.Events) == 0 || why.Events[0].Reason != "FailedScheduling" ||
			!strings.Contains(why.Events[0].Message, archfilter.ReasonNoCommonPlatform+`: container "mesh" (`+img.proxy+`)`) {
			t.Errorf("want the scheduler's FailedScheduling naming the mesh container first, got %+v", why.Events)
		}
	})

	t.Run("report -o json", func(t *testing.T) {
		r := k.run(t, noCredentials, "report", "-n", shop, "-o", "json")
		var report struct {
			Workloads []struct {
				Kind, Name, Error string
				On                []struct {
					Platform string
					CanRun   bool
					Blocking string
				}
			}
			Totals map[string]int
		}
		if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
			t.Fatalf("%v\n%s", err, r.transcript)
		}
		got := map[string]string{}
		for _, w := range report.Workloads {
			for _, on := range w.On {
				got[w.Kind+"/"+w.Name+" "+on.Platform] = fmt.Sprint(on.CanRun, " ", on.Blocking)
			}
		}
		gone := "false cannot resolve " + unreachable + " (Unreachable)"
		want := map[string]string{
			"Deployment/api linux/amd64":  "false " + img.api,
			"Deployment/api linux/arm64":  "true ",
			"Deployment/web linux/amd64":  "true ",
			"Deployment/web linux/arm64":  "false " + img.proxy,
			"DaemonSet/agent linux/amd64": "true ",
			"DaemonSet/agent linux/arm64": "true ",
			"Pod/checkout linux/amd64":    "false " + img.api,
			"Pod/checkout linux/arm64":    "false " + img.proxy,
			"Pod/legacy linux/amd64":      gone,
			"Pod/legacy linux/arm64":      gone,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("readiness (-want,+got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]int{"linux/amd64": 2, "linux/arm64": 2}, report.Totals); diff != "" {
			t.Errorf("totals (-want,+got):\n%s", diff)
		}
	})

	t.Run("report: the running section", func(t *testing.T) {
		r := k.run(t, noCredentials, "report", "-n", billing, "-o", "json")
		var report struct {
			Running struct {
				Pods     int
				Findings []struct{ Kind, Name, Pod, Node, Finding string }
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
			t.Fatalf("%v\n%s", err, r.transcript)
		}
		var got []string
		for _, f := range report.Running.Findings {
			got = append(got, strings.Join([]string{f.Kind, f.Name, f.Pod, f.Node, f.Finding}, " "))
		}
		want := []string{
			"Deployment invoices invoices-6b7c9-k2x4q arm-1 node-cannot-run",
			"Deployment invoices invoices-6b7c9-k2x4q arm-1 exec-format-error",
			"Job reindex reindex-8fz2m arm-2 exec-format-error",
		}
		if diff := cmp.Diff(want, got); diff != "" || report.Running.Pods != 2 || r.code != kubectlplugin.ExitFailed {
			t.Errorf("want exit status 1, 2 pods checked, findings (-want,+got):\n%s\n%s", diff, r.transcript)
		}
	})

	t.Run("completion", func(t *testing.T) {
		// What kubectl_complete-archfilter asks for `kubectl archfilter why -n shop <TAB>`.
		for _, tc := range []struct {
			words []string
			want  string
		}{
			{[]string{"why", "-n", shop, ""}, "checkout legacy :4"},
			{[]string{"why", "-n", shop, "c"}, "checkout :4"},
			{[]string{"why", "-n", "sh"}, "shop :4"},
			{[]string{"inspect", "-n", shop, "--for-pod", "l"}, "legacy :4"},
		} {
			var out, errOut bytes.Buffer
			cmd := kubectlplugin.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			cmd.SetArgs(append([]string{"__complete", "--kubeconfig", kubeconfig}, tc.words...))
			if err := cmd.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("%q: %v\n%s", tc.words, err, errOut.String())
			}
			if got := strings.Join(strings.Fields(out.String()), " "); got != tc.want {
				t.Errorf("completing %q: got %q, want %q", tc.words, got, tc.want)
			}
		}
	})
}

// pushShopImages starts the two registries and pushes the scenario's images.
func pushShopImages(t *testing.T) shopImages {
	t.Helper()
	pub := registrytest.StartDistribution(t, registrytest.DistributionOptions{})
	priv := registrytest.StartDistribution(t, registrytest.DistributionOptions{Username: pullUser, Password: pullPassword})
	fp, fpriv := registrytest.NewFixtures(t, pub.Target()), registrytest.NewFixtures(t, priv.Target())
	web := fp.Index("shop/web:v1", registrytest.OCI, "linux/amd64", "linux/arm64")
	// The API's next release adds linux/amd64: report and why suggest it.
	fpriv.Index("shop/api:v2.3", registrytest.OCI, "linux/arm64", "linux/amd64")
	server := func(goarch string) [][]registrytest.File {
		return [][]registrytest.File{{{Name: "app/", Dir: true}, {Name: "app/server", Body: exechdrtest.ELF(goarch)}}}
	}
	entry := ggcrv1.Config{Entrypoint: []string{"/app/server"}}
	return shopImages{
		pub:      pub.Host(),
		priv:     priv.Host(),
		web:      web.Ref,
		webAMD64: web.ChildRef("linux/amd64"),
		proxy:    fp.Image("mesh/proxy:v1", registrytest.Docker, "linux/amd64").Ref,
		agent:    fp.Attested("tools/agent:v1", "linux/amd64", "linux/arm64").Ref,
		chart:    fp.Artifact("charts/shop:0.1.0", registrytest.ArtifactHelm).Ref,
		api:      fpriv.Image("shop/api:v2", registrytest.OCI, "linux/arm64").Ref,
		server: fp.RunnableIndex("tools/server:v1",
			registrytest.Runnable{Platform: "linux/amd64", Config: entry, Layers: server("amd64")},
			registrytest.Runnable{Platform: "linux/arm64", Config: entry, Layers: server("amd64")}).Ref,
		relay: fp.Mislabelled("tools/relay:v1", registrytest.Claim{Index: "linux/amd64", Config: "linux/amd64"},
			registrytest.Claim{Index: "linux/arm64", Config: "linux/amd64"}).Ref,
	}
}

// pinnedManifest is the shop's web Deployment as a dependency bot pinned it: by the
// digest of its linux/amd64 manifest.
func pinnedManifest(img shopImages) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: %s}
`, img.webAMD64)
}

// lintManifest is a newcomer's first annotations: a misspelt key and a skip that is
// not a boolean on a Deployment whose image runs everywhere, and a Job whose
// declaration does not parse.
func lintManifest(img shopImages) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {archfilter.io/platfroms: linux/arm64, archfilter.io/skip: "yes"}
    spec:
      containers:
      - {name: app, image: %s}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop}
spec:
  template:
    metadata:
      annotations: {archfilter.io/platforms: "linux/amd64,,arm64"}
    spec:
      restartPolicy: Never
      containers:
      - {name: migrate, image: localhost/migrate:v1}
`, img.web)
}

// createShop creates the cluster's nodes (one linux/amd64, two linux/arm64) and the shop
// namespace: its default service account, its pull secret for the private registry, Deployments api (arm64 only) and
// web (its mesh sidecar amd64 only), DaemonSet agent (both), and two pods without a
// controller: checkout, for the archfilter scheduler, whose app (arm64 only) and mesh
// sidecar (amd64 only) share no platform, and legacy, whose registry is unreachable (for
// the default scheduler, which does not run here).
func createShop(t *testing.T, ctx context.Context, cs clientset.Interface, img shopImages) {
	t.Helper()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("creating %s: %v", what, err)
		}
	}
	for _, n := range []struct{ name, arch string }{{"amd-1", "amd64"}, {"arm-1", "arm64"}, {"arm-2", "arm64"}} {
		node := st.MakeNode().Name(n.name).Capacity(map[v1.ResourceName]string{
			v1.ResourcePods: "32", v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi",
		}).Obj()
		node.Labels = map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: n.arch, v1.LabelHostname: n.name}
		_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		must("node "+n.name, err)
	}
	_, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shop}}, metav1.CreateOptions{})
	must("namespace", err)
	// What the controller manager, which does not run here, creates in every namespace.
	_, err = cs.CoreV1().ServiceAccounts(shop).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	must("service account", err)
	auth := base64.StdEncoding.EncodeToString([]byte(pullUser + ":" + pullPassword))
	_, err = cs.CoreV1().Secrets(shop).Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: pullSecret, Namespace: shop},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, img.priv, auth))},
	}, metav1.CreateOptions{})
	must("pull secret", err)

	pullSecrets := []v1.LocalObjectReference{{Name: pullSecret}}
	template := func(app string, spec v1.PodSpec) v1.PodTemplateSpec {
		return v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: spec}
	}
	selector := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	for _, d := range []*appsv1.Deployment{
		{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: shop}, Spec: appsv1.DeploymentSpec{Selector: selector("api"),
			Template: template("api", v1.PodSpec{ImagePullSecrets: pullSecrets, Containers: []v1.Container{{Name: "api", Image: img.api}}})}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: shop}, Spec: appsv1.DeploymentSpec{Selector: selector("web"),
			Template: template("web", v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: img.web}, {Name: "mesh", Image: img.proxy}}})}},
	} {
		_, err := cs.AppsV1().Deployments(shop).Create(ctx, d, metav1.CreateOptions{})
		must("deployment "+d.Name, err)
	}
	_, err = cs.AppsV1().DaemonSets(shop).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: shop},
		Spec: appsv1.DaemonSetSpec{Selector: selector("agent"),
			Template: template("agent", v1.PodSpec{Containers: []v1.Container{{Name: "agent", Image: img.agent}}})},
	}, metav1.CreateOptions{})
	must("daemonset agent", err)
	for _, p := range []*v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: shop}, Spec: v1.PodSpec{
			SchedulerName: schedulerName, ImagePullSecrets: pullSecrets,
			Containers: []v1.Container{{Name: "app", Image: img.api}, {Name: "mesh", Image: img.proxy}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: shop}, Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "app", Image: unreachable}},
		}},
	} {
		_, err := cs.CoreV1().Pods(shop).Create(ctx, p, metav1.CreateOptions{})
		must("pod "+p.Name, err)
	}
}

// shopManifest is what check reads: the shop's web Deployment and agent DaemonSet, and
// the checkout pod, as a CI job would check them before applying.
func shopManifest(img shopImages) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: %s}
      - {name: mesh, image: %s}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - {name: agent, image: %s}
---
apiVersion: v1
kind: Pod
metadata: {name: checkout, namespace: shop}
spec:
  containers:
  - {name: app, image: %s}
  - {name: mesh, image: %s}
`, img.web, img.proxy, img.agent, img.api, img.proxy)
}

// dockerConfigDir returns a DOCKER_CONFIG directory granting the private registry's
// account on host.
func dockerConfigDir(t *testing.T, host string) string {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(pullUser + ":" + pullPassword))
	body := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// kubectl runs kubectl archfilter in-process as main does, through a kubeconfig.
type kubectl struct {
	kubeconfig string
}

type result struct {
	stdout, stderr string
	code           int
	// transcript is the command line as typed (without the kubeconfig), its stdout and
	// stderr, and its exit status: what the docs show.
	transcript string
}

func (k *kubectl) run(t *testing.T, dockerConfig string, args ...string) result {
	t.Helper()
	t.Setenv("DOCKER_CONFIG", dockerConfig)
	var out, errOut bytes.Buffer
	cmd := kubectlplugin.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append(append([]string(nil), args...), "--kubeconfig", k.kubeconfig))
	err := cmd.ExecuteContext(context.Background())
	if err != nil && err.Error() != "" {
		fmt.Fprintln(&errOut, "error:", err)
	}
	r := result{stdout: out.String(), stderr: errOut.String(), code: kubectlplugin.ExitCode(err)}
	r.transcript = fmt.Sprintf("$ kubectl archfilter %s\n%s%s(exit status %d)\n", strings.Join(args, " "), r.stdout, r.stderr, r.code)
	return r
}

// writeKubeconfig writes a kubeconfig for the test apiserver, as a user would have.
func writeKubeconfig(t *testing.T, c *rest.Config) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthority: c.CAFile, CertificateAuthorityData: c.CAData, InsecureSkipTLSVerify: c.Insecure, TLSServerName: c.ServerName}
	cfg.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: c.BearerToken, TokenFile: c.BearerTokenFile, ClientCertificate: c.CertFile, ClientKey: c.KeyFile, ClientCertificateData: c.CertData, ClientKeyData: c.KeyData}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// docFiles are the files with golden blocks: every output must be in the first,
// docs/kubectl-plugin.md; README.md shows some of them.
func docFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, f := range []string{"docs/kubectl-plugin.md", "README.md"} {
		abs, err := filepath.Abs(filepath.Join("..", "..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, abs)
	}
	return files
}

var (
	goldenMarkerRE = regexp.MustCompile(`^\s*<!-- golden: ([\w.-]+) -->\s*$`)
	// Volatile parts of an output: the registries' ports (127.0.0.1:1, unreachable, is
	// one too) and the clock times of events. Digests are not: fixtures push the same
	// bytes on every run.
	hostRE  = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	clockRE = regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`)
)

// checkDocs compares each <!-- golden: NAME --> block of docFiles with outputs[NAME], or
// rewrites the block with it under -update.
func checkDocs(t *testing.T, files []string, outputs map[string]string) {
	t.Helper()
	used := map[string]bool{}
	for i, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		var out []string
		for n := 0; n < len(lines); n++ {
			out = append(out, lines[n])
			m := goldenMarkerRE.FindStringSubmatch(lines[n])
			if m == nil {
				continue
			}
			name := m[1]
			if n+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[n+1]), "```") {
				t.Errorf("%s:%d: golden %q is not followed by a fenced block", file, n+1, name)
				continue
			}
			out = append(out, lines[n+1])
			start := n + 2
			end := start
			for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
				end++
			}
			if end == len(lines) {
				t.Fatalf("%s:%d: golden %q: the fenced block is not closed", file, n+2, name)
			}
			want, ok := outputs[name]
			if !ok {
				t.Errorf("%s:%d: no output is named %q (known: %v)", file, n+1, name, keys(outputs))
			}
			if i == 0 {
				used[name] = true
			}
			got := strings.Split(strings.TrimRight(want, "\n"), "\n")
			for j := range got {
				got[j] = strings.TrimRight(got[j], " \t")
			}
			if ok && !*updateDocs {
				if diff := cmp.Diff(normalise(strings.Join(lines[start:end], "\n")), normalise(strings.Join(got, "\n"))); diff != "" {
					t.Errorf("%s:%d: block %q is not what this run printed (registry ports, times and runs of spaces aside) (-doc,+run):\n%s\n"+
						"If the change is intended: go test ./test/integration/scheduling/ -run TestKubectlPlugin -update", file, n+2, name, diff)
				}
			}
			if ok && *updateDocs {
				out = append(out, got...)
			} else {
				out = append(out, lines[start:end]...)
			}
			out = append(out, lines[end])
			n = end
		}
		if *updateDocs {
			if err := os.WriteFile(file, []byte(strings.Join(out, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("updated the golden blocks of %s", file)
		}
	}
	for name := range outputs {
		if !used[name] {
			t.Errorf("%s has no <!-- golden: %s --> block: every output is documented", files[0], name)
		}
	}
}

// normalise replaces the registries' ports (each host by the order it first appears in)
// and clock times, drops what only this flavour's kube-scheduler writes
// (schedulerOnlyWording), and collapses runs of spaces after a line's indentation: the
// columns of a table move with the ports' widths.
func normalise(s string) []string {
	hosts := map[string]string{}
	s = hostRE.ReplaceAllStringFunc(s, func(h string) string {
		if _, ok := hosts[h]; !ok {
			hosts[h] = fmt.Sprintf("<registry %d>", len(hosts)+1)
		}
		return hosts[h]
	})
	s = clockRE.ReplaceAllString(s, "<time>")
	for _, w := range schedulerOnlyWording {
		s = strings.ReplaceAll(s, w, "")
	}
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		// Recorded only when resolving took over 3 s, which a loaded machine
		// may take: not part of what the examples show.
		if strings.Contains(l, " ResolvingImagePlatforms: ") {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
		lines = append(lines, indent+strings.Join(strings.Fields(l), " "))
	}
	return lines
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// hasRow reports whether a line of a table holds cells, adjacent and in order.
func hasRow(table string, cells ...string) bool {
	want := " " + strings.Join(cells, " ") + " "
	for _, line := range strings.Split(table, "\n") {
		if strings.Contains(" "+strings.Join(strings.Fields(line), " ")+" ", want) {
			return true
		}
	}
	return false
}

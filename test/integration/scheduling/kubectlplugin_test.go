package scheduling

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	testutils "k8s.io/kubernetes/test/integration/util"

	"github.com/archfilter/archfilter/internal/kubectlplugin"
	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// TestKubectlPluginAgainstAnAPIServer runs kubectl archfilter why and report through a
// kubeconfig against a real apiserver (no scheduler: the events are written by the test
// as archfilter writes them, through events.k8s.io/v1).
func TestKubectlPluginAgainstAnAPIServer(t *testing.T) {
	reg := registrytest.NewMemory(t)
	imgs := pushImages(t, reg)
	testCtx := testutils.InitTestAPIServer(t, "kubectl-archfilter", nil)
	ctx, cs, ns := testCtx.Ctx, testCtx.ClientSet, testCtx.NS.Name
	kubeconfig := writeKubeconfig(t, testCtx)
	t.Setenv("DOCKER_CONFIG", t.TempDir())

	for _, n := range []struct{ name, arch string }{{"amd-1", "amd64"}, {"arm-1", "arm64"}, {"arm-2", "arm64"}} {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: n.arch}}}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "app", Image: imgs.multiArch}, {Name: "proxy", Image: imgs.amd64Only},
	}}}
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "agent", Image: imgs.arm64Only}}}},
	}}
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const note = "images run on linux/amd64"
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.resolved", Namespace: ns},
		EventTime:  metav1.NewMicroTime(time.Now()), ReportingController: "archfilter-scheduler", ReportingInstance: "test",
		Action: "Scheduling", Reason: archfilter.EventResolved, Note: note, Type: v1.EventTypeNormal,
		Regarding: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, Namespace: ns, UID: pod.UID},
	}
	if _, err := cs.EventsV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) (string, int) {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := kubectlplugin.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		cmd.SetArgs(append(args, "--kubeconfig", kubeconfig, "-n", ns, "--insecure-registry", reg.Host(), "-o", "json"))
		err := cmd.ExecuteContext(context.Background())
		if err != nil {
			t.Logf("%v: %v\n%s", args, err, errOut.String())
		}
		return out.String(), kubectlplugin.ExitCode(err)
	}

	out, code := run("why", "web")
	if code != 0 {
		t.Fatalf("why: exit status %d", code)
	}
	var why struct {
		Platforms struct {
			Platforms []struct{ Architecture string }
		}
		Nodes []struct {
			Platform string
			Nodes    int
			CanRun   bool
		}
		Events []struct{ Reason, Message string }
	}
	if err := json.Unmarshal([]byte(out), &why); err != nil {
		t.Fatalf("why -o json: %v\n%s", err, out)
	}
	if len(why.Platforms.Platforms) != 1 || why.Platforms.Platforms[0].Architecture != "amd64" {
		t.Errorf("why: platforms %+v, want linux/amd64 only\n%s", why.Platforms, out)
	}
	wantNodes := map[string]string{"linux/amd64": "1 true", "linux/arm64": "2 false"}
	for _, n := range why.Nodes {
		if got := fmt.Sprint(n.Nodes, " ", n.CanRun); got != wantNodes[n.Platform] {
			t.Errorf("why: nodes of %s: got %s, want %s", n.Platform, got, wantNodes[n.Platform])
		}
	}
	if len(why.Nodes) != 2 || len(why.Events) != 1 || why.Events[0].Reason != archfilter.EventResolved || why.Events[0].Message != note {
		t.Errorf("why: want 2 node platforms and the archfilter event, got %+v %+v", why.Nodes, why.Events)
	}

	out, code = run("report")
	if code != 0 {
		t.Fatalf("report: exit status %d", code)
	}
	var report struct {
		Workloads []struct {
			Kind, Name string
			On         []struct {
				Platform string
				CanRun   bool
				Blocking string
			}
		}
		Totals map[string]int
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("report -o json: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, w := range report.Workloads {
		for _, on := range w.On {
			got[w.Kind+"/"+w.Name+" "+on.Platform] = fmt.Sprint(on.CanRun, " ", on.Blocking)
		}
	}
	want := map[string]string{
		"Pod/web linux/amd64":         "true ",
		"Pod/web linux/arm64":         "false " + imgs.amd64Only,
		"DaemonSet/agent linux/amd64": "false " + imgs.arm64Only,
		"DaemonSet/agent linux/arm64": "true ",
	}
	if len(got) != len(want) {
		t.Errorf("report: got %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("report: %s: got %q, want %q", k, got[k], w)
		}
	}
}

// writeKubeconfig writes a kubeconfig for the test apiserver, as a user would have.
func writeKubeconfig(t *testing.T, testCtx *testutils.TestContext) string {
	t.Helper()
	c := testCtx.KubeConfig
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthority: c.CAFile, CertificateAuthorityData: c.CAData, InsecureSkipTLSVerify: c.Insecure}
	cfg.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: c.BearerToken, TokenFile: c.BearerTokenFile, ClientCertificate: c.CertFile, ClientKey: c.KeyFile, ClientCertificateData: c.CertData, ClientKeyData: c.KeyData}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return path
}

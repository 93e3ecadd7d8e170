package kubectlplugin

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// closedPort returns the address of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// writeKubeconfig writes cfg into a temporary file.
func writeKubeconfig(t *testing.T, cfg *clientcmdapi.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestClusterErrors: each way a newcomer's kubeconfig can fail gives, for every command
// that reads the cluster, one error that says what is wrong and what to do, never
// client-go's `Get "http://localhost:8080/..."`.
func TestClusterErrors(t *testing.T) {
	// Not in a pod: the service account would be used otherwise.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")

	refused := writeTestKubeconfig(t, "http://"+closedPort(t))
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`))
	}))
	t.Cleanup(unauthorized.Close)
	expired := writeTestKubeconfig(t, unauthorized.URL)
	noCurrent := clientcmdapi.NewConfig()
	noCurrent.Clusters["c"] = &clientcmdapi.Cluster{Server: "http://" + closedPort(t)}
	noCurrent.Contexts["kind-a"] = &clientcmdapi.Context{Cluster: "c"}
	noCurrent.Contexts["kind-b"] = &clientcmdapi.Context{Cluster: "c"}
	noCurrentPath := writeKubeconfig(t, noCurrent)
	missing := filepath.Join(t.TempDir(), "nope")

	// Every command that needs the cluster, through each of its ways in.
	commands := [][]string{
		{"why", "web-1"},
		{"report"},
		{"report", "--running"},
		{"inspect", "--for-pod", "web-1", "shop/web:v1"},
		{"inspect", "--pull-secret", "shop/regcred", "shop/web:v1"},
	}
	for _, tc := range []struct {
		name  string
		env   string // KUBECONFIG
		flags []string
		// want are substrings of the error; none of them may be missing.
		want []string
	}{
		{name: "KUBECONFIG names no file", env: missing,
			want: []string{"no kubeconfig", "KUBECONFIG=" + missing, "names no file that exists", "--kubeconfig FILE"}},
		{name: "--kubeconfig names no file", flags: []string{"--kubeconfig", missing},
			want: []string{"--kubeconfig " + missing + ": no such file"}},
		{name: "no current context", flags: []string{"--kubeconfig", noCurrentPath},
			want: []string{"sets no current context", "--context NAME", "kubectl config use-context", "its contexts: kind-a, kind-b"}},
		{name: "unknown --context", flags: []string{"--kubeconfig", refused, "--context", "prod"},
			want: []string{`--context "prod": no such context in kubeconfig ` + refused, "its contexts: other, stub"}},
		{name: "cluster refuses", flags: []string{"--kubeconfig", refused},
			want: []string{"cannot reach the cluster at http://127.0.0.1:", `(context "stub" in ` + refused + ")", "connection refused", "--context NAME", "kubectl config get-contexts"}},
		{name: "credentials refused", flags: []string{"--kubeconfig", expired},
			want: []string{"the cluster at " + unauthorized.URL, `context "stub"`, "401 Unauthorized", "log in again"}},
	} {
		for _, args := range commands {
			t.Run(tc.name+"/"+strings.Join(args, " "), func(t *testing.T) {
				t.Setenv("KUBECONFIG", tc.env)
				_, stderr, code := run(t, "", append(args, tc.flags...)...)
				if code != ExitInputError {
					t.Errorf("exit status %d, want %d", code, ExitInputError)
				}
				for _, w := range tc.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("stderr does not say %q:\n%s", w, stderr)
					}
				}
				if strings.Contains(stderr, "localhost:8080") || strings.Contains(stderr, `Get "`) {
					t.Errorf("stderr shows client-go's request instead of the problem:\n%s", stderr)
				}
			})
		}
	}
}

// TestNoKubeconfig: neither KUBECONFIG nor ~/.kube/config. client-go's default file is
// fixed when the process starts, so the case runs only where it does not exist.
func TestNoKubeconfig(t *testing.T) {
	if _, err := os.Stat(clientcmd.RecommendedHomeFile); err == nil {
		t.Skipf("%s exists", clientcmd.RecommendedHomeFile)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", "")
	for _, args := range [][]string{{"why", "web-1"}, {"report"}, {"inspect", "--pull-secret", "shop/regcred", "shop/web:v1"}} {
		_, stderr, code := run(t, "", args...)
		want := "no kubeconfig: $KUBECONFIG is not set and " + clientcmd.RecommendedHomeFile + " does not exist; set KUBECONFIG or pass --kubeconfig FILE"
		if code != ExitInputError || !strings.Contains(stderr, want) {
			t.Errorf("%q: exit status %d, want %d and %q; stderr:\n%s", args, code, ExitInputError, want, stderr)
		}
	}
}

// TestClusterClientAsksOnce: a command that connects more than once (check, why) asks
// the cluster whether it answers once, and every client is built with the CLI's rate
// limits.
func TestClusterClientAsksOnce(t *testing.T) {
	versions := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			versions++
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"34"}`))
	}))
	t.Cleanup(srv.Close)
	kube := genericclioptions.NewConfigFlags(true)
	configureClients(kube)
	path := writeTestKubeconfig(t, srv.URL)
	kube.KubeConfig = &path
	for range 3 {
		if _, ns, err := clusterClient(kube); err != nil || ns != "default" {
			t.Fatalf("clusterClient: namespace %q, error %v", ns, err)
		}
	}
	if versions != 1 {
		t.Errorf("GET /version %d times, want 1", versions)
	}
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != clientQPS || cfg.Burst != clientBurst {
		t.Errorf("QPS %v, burst %d; want %v, %d (client-go's 5 and 10 throttle report --running)", cfg.QPS, cfg.Burst, float32(clientQPS), clientBurst)
	}
}

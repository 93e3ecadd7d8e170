package kubectlplugin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// stubAPIServer answers the two lists completion makes: the pods of shop and the
// namespaces. test/integration/scheduling completes against a real apiserver.
func stubAPIServer(t *testing.T) string {
	t.Helper()
	write := func(w http.ResponseWriter, obj any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(obj)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/shop/pods":
			list := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
			for _, name := range []string{"worker-2", "web-1", "api-1"} {
				list.Items = append(list.Items, v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}})
			}
			write(w, list)
		case "/api/v1/namespaces/default/pods":
			write(w, &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}})
		case "/api/v1/namespaces":
			list := &v1.NamespaceList{TypeMeta: metav1.TypeMeta{Kind: "NamespaceList", APIVersion: "v1"}}
			for _, name := range []string{"default", "shop", "kube-system", "shipping"} {
				list.Items = append(list.Items, v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
			}
			write(w, list)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// writeTestKubeconfig writes a kubeconfig whose contexts "stub" (current) and "other"
// name server.
func writeTestKubeconfig(t *testing.T, server string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["stub"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["stub"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["stub"] = &clientcmdapi.Context{Cluster: "stub", AuthInfo: "stub"}
	cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "stub", AuthInfo: "stub", Namespace: "shop"}
	cfg.CurrentContext = "stub"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCompletion runs cobra's __complete, as kubectl_complete-archfilter does, and
// checks the completions and the directive (4: no file completion) it prints.
func TestCompletion(t *testing.T) {
	kubeconfig := writeTestKubeconfig(t, stubAPIServer(t))
	unreachable := writeTestKubeconfig(t, "http://127.0.0.1:1")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{name: "why: pods of -n", args: []string{"why", "--kubeconfig", kubeconfig, "-n", "shop", ""}, want: []string{"api-1", "web-1", "worker-2", ":4"}},
		{name: "why: pods by prefix", args: []string{"why", "--kubeconfig", kubeconfig, "-n", "shop", "w"}, want: []string{"web-1", "worker-2", ":4"}},
		{name: "why: the context's namespace", args: []string{"why", "--kubeconfig", kubeconfig, "--context", "other", "a"}, want: []string{"api-1", ":4"}},
		{name: "why: one pod only", args: []string{"why", "--kubeconfig", kubeconfig, "-n", "shop", "web-1", ""}, want: []string{":4"}},
		{name: "-n: namespaces by prefix", args: []string{"why", "--kubeconfig", kubeconfig, "-n", "sh"}, want: []string{"shipping", "shop", ":4"}},
		{name: "--namespace on report", args: []string{"report", "--kubeconfig", kubeconfig, "--namespace", ""}, want: []string{"default", "kube-system", "shipping", "shop", ":4"}},
		{name: "--for-pod", args: []string{"inspect", "--kubeconfig", kubeconfig, "-n", "shop", "--for-pod", "we"}, want: []string{"web-1", ":4"}},
		{name: "--context", args: []string{"why", "--kubeconfig", kubeconfig, "--context", ""}, want: []string{"other", "stub", ":4"}},
		{name: "-o", args: []string{"report", "-o", ""}, want: []string{"table", "wide", "json", "yaml", "csv", ":4"}},
		{name: "cluster unreachable: nothing, at once", args: []string{"why", "--kubeconfig", unreachable, ""}, want: []string{":4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := run(t, "", append([]string{"__complete"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
			}
			if diff := cmp.Diff(tc.want, strings.Fields(stdout)); diff != "" {
				t.Errorf("completions (-want,+got):\n%s\nstderr:\n%s", diff, stderr)
			}
		})
	}
}

// TestCompletionScript runs cmd/kubectl-archfilter/kubectl_complete-archfilter as kubectl
// does, with a stand-in kubectl-archfilter that prints its arguments: the one beside the
// script is preferred, also through a symbolic link (krew's bin/), else PATH's.
func TestCompletionScript(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the completion script is POSIX sh; Windows archives do not carry it")
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "cmd", "kubectl-archfilter", completionScript))
	if err != nil {
		t.Fatal(err)
	}
	stub := func(dir, name string) {
		t.Helper()
		body := "#!/bin/sh\necho " + name + "\nfor a in \"$@\"; do echo \"[$a]\"; done\n"
		if err := os.WriteFile(filepath.Join(dir, "kubectl-archfilter"), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	store, bin, path := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(store, completionScript), script, 0o755); err != nil {
		t.Fatal(err)
	}
	stub(store, "beside")
	stub(path, "on-path")
	if err := os.Symlink(filepath.Join(store, completionScript), filepath.Join(bin, completionScript)); err != nil {
		t.Fatal(err)
	}
	alone := t.TempDir()
	if err := os.WriteFile(filepath.Join(alone, completionScript), script, 0o755); err != nil {
		t.Fatal(err)
	}
	// kubectl passes the words after the plugin's name, the last (maybe empty) to complete.
	want := func(which string) string { return which + "\n[__complete]\n[why]\n[-n]\n[shop]\n[]\n" }
	for _, tc := range []struct{ name, exe, want string }{
		{"beside the script", filepath.Join(store, completionScript), want("beside")},
		{"through a symbolic link", filepath.Join(bin, completionScript), want("beside")},
		{"on PATH", filepath.Join(alone, completionScript), want("on-path")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(tc.exe, "why", "-n", "shop", "")
			cmd.Env = append(os.Environ(), "PATH="+path+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if diff := cmp.Diff(tc.want, string(out)); diff != "" {
				t.Errorf("output (-want,+got):\n%s", diff)
			}
		})
	}
}

package kubectlplugin

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/archfilter/archfilter/internal/exechdr/exechdrtest"
	"github.com/archfilter/archfilter/internal/registrytest"
)

type file = registrytest.File

// binaryFixtures push the images --deep reads: honest and lying indexes, scripts,
// links and whiteouts, a missing interpreter, an image without entrypoint, and one
// with a large layer.
type binaryFixtures struct {
	host                                            string
	honest, lying, script, envScript, whiteout      registrytest.Pushed
	noInterpreter, noEntrypoint, large, lyingInterp registrytest.Pushed
}

func server(goarch string) []registrytest.File {
	return []file{{Name: "app/", Dir: true}, {Name: "app/server", Body: exechdrtest.ELF(goarch)}}
}

// debianish is a base layer as merged-/usr distributions ship it: /bin is a relative
// symlink to usr/bin.
func debianish(goarch string) []registrytest.File {
	return []file{
		{Name: "bin", Symlink: "usr/bin"}, {Name: "usr/", Dir: true}, {Name: "usr/bin/", Dir: true},
		{Name: "usr/bin/dash", Body: exechdrtest.ELF(goarch)}, {Name: "usr/bin/sh", Symlink: "dash"},
		{Name: "usr/bin/env", Body: exechdrtest.ELF(goarch)},
	}
}

func pushBinaryFixtures(t *testing.T, m *registrytest.Memory) binaryFixtures {
	t.Helper()
	f := m.Fixtures(t)
	entry := v1.Config{Entrypoint: []string{"/app/server"}}
	random := make([]byte, 8<<10)
	_, _ = rand.Read(random)
	runScript := []file{{Name: "app/", Dir: true}, {Name: "app/run.sh", Body: []byte("#!/bin/sh\nexec /app/server\n")}}
	return binaryFixtures{
		host: m.Host(),
		honest: f.RunnableIndex("honest:v1",
			registrytest.Runnable{Platform: "linux/amd64", Config: entry, Layers: [][]file{server("amd64")}},
			registrytest.Runnable{Platform: "linux/arm64", Config: entry, Layers: [][]file{server("arm64")}}),
		// The arm64 entry is the amd64 build, pushed under the wrong platform.
		lying: f.RunnableIndex("lying:v1",
			registrytest.Runnable{Platform: "linux/amd64", Config: entry, Layers: [][]file{server("amd64")}},
			registrytest.Runnable{Platform: "linux/arm64", Config: entry, Layers: [][]file{server("amd64")}}),
		script: f.RunnableImage("script:v1", registrytest.Runnable{Platform: "linux/arm64",
			Config: v1.Config{Entrypoint: []string{"/app/run.sh"}}, Layers: [][]file{debianish("arm64"), runScript}}),
		// The script's interpreter is amd64 in an arm64 image.
		lyingInterp: f.RunnableImage("lying-interp:v1", registrytest.Runnable{Platform: "linux/arm64",
			Config: v1.Config{Entrypoint: []string{"/app/run.sh"}}, Layers: [][]file{debianish("amd64"), runScript}}),
		// "#!/usr/bin/env python3": env, then python3 through PATH and a relative symlink.
		envScript: f.RunnableImage("env-script:v1", registrytest.Runnable{Platform: "linux/amd64",
			Config: v1.Config{Cmd: []string{"tool"}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}},
			Layers: [][]file{debianish("amd64"), {
				{Name: "usr/local/bin/", Dir: true}, {Name: "usr/local/bin/python3", Symlink: "python3.12"},
				{Name: "usr/local/bin/python3.12", Body: exechdrtest.ELF("amd64")},
				{Name: "usr/local/bin/tool", Body: []byte("#!/usr/bin/env python3\nprint('hi')\n")},
			}}}),
		// The lower layer's amd64 /opt/bin/server is deleted by the upper one, so the
		// PATH search finds the arm64 /app/server.
		whiteout: f.RunnableImage("whiteout:v1", registrytest.Runnable{Platform: "linux/arm64",
			Config: v1.Config{Entrypoint: []string{"server"}, Env: []string{"PATH=/opt/bin:/app"}},
			Layers: [][]file{{{Name: "opt/bin/", Dir: true}, {Name: "opt/bin/server", Body: exechdrtest.ELF("amd64")}},
				append(server("arm64"), file{Name: "opt/bin/.wh.server"})}}),
		noInterpreter: f.RunnableImage("no-interpreter:v1", registrytest.Runnable{Platform: "linux/amd64",
			Config: v1.Config{Entrypoint: []string{"/app/run.py"}},
			Layers: [][]file{{{Name: "app/run.py", Body: []byte("#!/usr/bin/python3\n")}}}}),
		noEntrypoint: f.RunnableImage("data:v1", registrytest.Runnable{Platform: "linux/amd64",
			Layers: [][]file{{{Name: "data/x", Body: []byte("x")}}}}),
		large: f.RunnableImage("large:v1", registrytest.Runnable{Platform: "linux/amd64", Config: entry,
			Layers: [][]file{server("amd64"), {{Name: "blob", Body: random}}}}),
	}
}

type inspectDeepJSON struct {
	Images []struct {
		Image    string
		Error    string
		Binaries []binaryCheck
	}
}

func runInspectDeep(t *testing.T, args ...string) (inspectDeepJSON, string, int) {
	t.Helper()
	stdout, stderr, code := run(t, "", append([]string{"inspect", "--deep", "-o", "json"}, args...)...)
	var got inspectDeepJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("decoding -o json: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	return got, stderr, code
}

// summary is one check as "platform result: message".
func summary(b binaryCheck) string {
	return b.Platform + " " + b.Result + ": " + b.Message
}

func TestInspectDeep(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushBinaryFixtures(t, m)
	for _, tc := range []struct {
		name  string
		image registrytest.Pushed
		args  []string
		want  []string
		code  int
	}{
		{name: "honest index", image: fx.honest, want: []string{
			"linux/amd64 ok: linux/amd64 manifest, x86-64 binary (/app/server)",
			"linux/arm64 ok: linux/arm64 manifest, AArch64 binary (/app/server)",
		}},
		{name: "lying index", image: fx.lying, code: ExitFailed, want: []string{
			"linux/amd64 ok: linux/amd64 manifest, x86-64 binary (/app/server)",
			"linux/arm64 mismatch: linux/arm64 manifest, x86-64 binary (/app/server)",
		}},
		{name: "script through a symlinked /bin", image: fx.script, want: []string{
			"linux/arm64 ok: linux/arm64 manifest, AArch64 binary (/bin/sh -> /usr/bin/dash)",
		}},
		{name: "script whose interpreter lies", image: fx.lyingInterp, code: ExitFailed, want: []string{
			"linux/arm64 mismatch: linux/arm64 manifest, x86-64 binary (/bin/sh -> /usr/bin/dash)",
		}},
		{name: "env script through PATH", image: fx.envScript, want: []string{
			"linux/amd64 ok: linux/amd64 manifest, x86-64 binary (/usr/local/bin/python3 -> /usr/local/bin/python3.12)",
		}},
		{name: "whiteout hides the lower layer's file", image: fx.whiteout, want: []string{
			"linux/arm64 ok: linux/arm64 manifest, AArch64 binary (/app/server)",
		}},
		{name: "missing interpreter", image: fx.noInterpreter, code: ExitFailed, want: []string{
			"linux/amd64 missing: linux/amd64 manifest: interpreter /usr/bin/python3 of /app/run.py is not in the image",
		}},
		{name: "no entrypoint", image: fx.noEntrypoint, want: []string{
			"linux/amd64 noEntrypoint: linux/amd64: no entrypoint to check",
		}},
		{name: "layer over the limit", image: fx.large, args: []string{"--max-layer-size", "1Ki"}, code: ExitInputError, want: []string{
			"linux/amd64 notChecked: linux/amd64: not checked: looking for entrypoint /app/server: layer 1 (",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, stderr, code := runInspectDeep(t, append([]string{"--insecure-registry", fx.host, tc.image.Ref}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if len(got.Images) != 1 || len(got.Images[0].Binaries) != len(tc.want) {
				t.Fatalf("got %+v, want %d checks", got, len(tc.want))
			}
			for i, b := range got.Images[0].Binaries {
				if s := summary(b); !strings.HasPrefix(s, tc.want[i]) {
					t.Errorf("check %d:\n got %s\nwant %s", i, s, tc.want[i])
				}
			}
		})
	}
	t.Run("chain", func(t *testing.T) {
		got, _, _ := runInspectDeep(t, "--insecure-registry", fx.host, fx.envScript.Ref)
		want := []string{
			"/usr/local/bin/tool: script for /usr/bin/env python3",
			"/usr/bin/env: x86-64 binary",
			"/usr/local/bin/python3 -> /usr/local/bin/python3.12: x86-64 binary",
		}
		if diff := cmp.Diff(want, got.Images[0].Binaries[0].Chain); diff != "" {
			t.Errorf("chain (-want,+got):\n%s", diff)
		}
	})
	t.Run("large layer is not pulled", func(t *testing.T) {
		m.Requests.Reset()
		_, _, _ = runInspectDeep(t, "--insecure-registry", fx.host, "--max-layer-size", "1Ki", fx.large.Ref)
		for _, r := range m.Requests.All() {
			if strings.Contains(r.String(), "/blobs/") && !strings.Contains(r.String(), fx.configDigest(t, m, fx.large)) {
				t.Errorf("a layer was requested: %s", r)
			}
		}
	})
	t.Run("table", func(t *testing.T) {
		stdout, _, code := run(t, "", "inspect", "--deep", "--insecure-registry", fx.host, fx.lying.Ref)
		if code != ExitFailed || !hasLine(stdout, fx.lying.Ref, "mismatch", "linux/arm64 manifest, x86-64 binary (/app/server)") {
			t.Errorf("exit status %d, want %d and the mismatch in the table:\n%s", code, ExitFailed, stdout)
		}
	})
}

// configDigest is the digest of a pushed single-platform image's config.
func (binaryFixtures) configDigest(t *testing.T, m *registrytest.Memory, p registrytest.Pushed) string {
	t.Helper()
	body, _ := m.Fixtures(t).Manifest(strings.TrimPrefix(p.Ref, m.Host()+"/"))
	var mf v1.Manifest
	if err := json.Unmarshal(body, &mf); err != nil {
		t.Fatal(err)
	}
	return mf.Config.Digest.String()
}

// hasLine reports whether a line holds each of parts, in order.
func hasLine(out string, parts ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := line, true
		for _, p := range parts {
			i := strings.Index(rest, p)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(p):]
		}
		if ok {
			return true
		}
	}
	return false
}

// TestDeepAuthRefused: a registry that serves the manifests but refuses a layer leaves
// the platform not checked, naming why.
func TestDeepAuthRefused(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushBinaryFixtures(t, m)
	var mf v1.Manifest
	body, _ := m.Fixtures(t).Manifest("script:v1")
	if err := json.Unmarshal(body, &mf); err != nil {
		t.Fatal(err)
	}
	top := mf.Layers[len(mf.Layers)-1].Digest.String()
	m.AddFault(registrytest.Fault{Path: "/v2/script/blobs/" + top, Status: http.StatusUnauthorized,
		Body: []byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)})
	got, stderr, code := runInspectDeep(t, "--insecure-registry", fx.host, fx.script.Ref)
	if code != ExitInputError {
		t.Errorf("exit status %d, want %d; stderr:\n%s", code, ExitInputError, stderr)
	}
	if b := got.Images[0].Binaries; len(b) != 1 || b[0].Result != binaryNotChecked || !strings.Contains(b[0].Message, "Unauthorized") {
		t.Errorf("want one notChecked naming Unauthorized, got %+v", b)
	}

	// An image that cannot be read at all is an error of inspect's own.
	priv := registrytest.NewMemory(t, registrytest.WithBasicAuth("u", "p"))
	pf := pushBinaryFixtures(t, priv)
	got, _, code = runInspectDeep(t, "--insecure-registry", pf.host, pf.honest.Ref)
	if code != ExitInputError || !strings.Contains(got.Images[0].Error, "Unauthorized") {
		t.Errorf("private registry without credentials: exit %d, %+v; want %d and Unauthorized", code, got.Images, ExitInputError)
	}
}

// TestCheckDeep: check --deep reads each container's executable, the pod's command
// replacing the image's entrypoint.
func TestCheckDeep(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushBinaryFixtures(t, m)
	withCommand := strings.Replace(deployment("cmd", fx.script.Ref), "image: "+fx.script.Ref+"}", "image: "+fx.script.Ref+", command: [/app/missing]}", 1)
	stdin := deployment("web", fx.honest.Ref) + "---\n" + deployment("liar", fx.lying.Ref, fx.script.Ref) + "---\n" + withCommand
	stdout, stderr, code := run(t, stdin, "check", "--deep", "-o", "json", "--insecure-registry", fx.host, "-f", "-")
	if code != ExitFailed {
		t.Errorf("exit status %d, want %d; stderr:\n%s", code, ExitFailed, stderr)
	}
	var got struct {
		Workloads []workloadView
		Binaries  []binaryCheck
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, b := range got.Binaries {
		lines = append(lines, b.Workload+" "+b.Container+" "+b.Platform+" "+b.Result)
	}
	want := []string{
		"Deployment/shop/web c0 linux/amd64 ok", "Deployment/shop/web c0 linux/arm64 ok",
		"Deployment/shop/liar c0 linux/amd64 ok", "Deployment/shop/liar c0 linux/arm64 mismatch",
		"Deployment/shop/liar c1 linux/arm64 ok",
		"Deployment/shop/cmd c0 linux/arm64 missing",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("binary checks (-want,+got):\n%s", diff)
	}
	if b := got.Binaries[len(got.Binaries)-1]; !strings.Contains(b.Message, "entrypoint /app/missing is not in the image") {
		t.Errorf("the pod's command should replace the entrypoint: %+v", b)
	}

	// Without --deep there is no binaries key, and nothing but manifests is read.
	m.Requests.Reset()
	stdout, _, code = run(t, deployment("liar", fx.lying.Ref), "check", "-o", "json", "--insecure-registry", fx.host, "-f", "-")
	if code != 0 || strings.Contains(stdout, `"binaries"`) {
		t.Errorf("without --deep: exit %d, output:\n%s", code, stdout)
	}

	// The table lists each check.
	stdout, _, _ = run(t, deployment("liar", fx.lying.Ref), "check", "--deep", "--insecure-registry", fx.host, "-f", "-")
	if !hasLine(stdout, "Deployment/shop/liar", "c0", fx.lying.Ref, "mismatch", "linux/arm64 manifest, x86-64 binary (/app/server)") {
		t.Errorf("table lacks the mismatch:\n%s", stdout)
	}
}

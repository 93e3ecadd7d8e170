// Package toolchain checks that every path that runs go uses the one Go
// toolchain go.mod names: a machine starts on its own Go and, with
// GOTOOLCHAIN=local, ignores go.mod's toolchain line, so the Makefile,
// .ci/run, the scripts under hack/, the Dockerfile and the README's setup each
// set GOTOOLCHAIN themselves, and a bump has to change them all.
package toolchain

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

const root = "../.."

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// toolchain is go.mod's toolchain line: the one source the others must match.
func toolchain(t *testing.T, modFile string) string {
	t.Helper()
	f, err := modfile.Parse(modFile, []byte(read(t, modFile)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Toolchain == nil {
		t.Fatalf("%s has no toolchain line", modFile)
	}
	return f.Toolchain.Name
}

func TestEveryEntryPointSetsGoModsToolchain(t *testing.T) {
	want := toolchain(t, "go.mod")
	if got := toolchain(t, "go.k8s1.35.mod"); got != want {
		t.Errorf("go.k8s1.35.mod's toolchain is %s, go.mod's %s", got, want)
	}
	for _, tc := range []struct{ file, pattern string }{
		{"Makefile", `(?m)^export GOTOOLCHAIN := (\S+)$`},
		{"hack/lib/go.sh", `(?m)^export GOTOOLCHAIN=(\S+)$`},
		{".ci/run", `(?m)^export GOTOOLCHAIN=(\S+)$`},
		{"Dockerfile", `(?m)^ENV GOTOOLCHAIN=(\S+)$`},
		// The README's setup, in the block with make demo and make test.
		{"README.md", "(?m)^export GOTOOLCHAIN=(\\S+)\\s.*\\n(?:.*\\n)*?make demo "},
	} {
		m := regexp.MustCompile(tc.pattern).FindStringSubmatch(read(t, tc.file))
		if m == nil {
			t.Errorf("%s does not set GOTOOLCHAIN (%s)", tc.file, tc.pattern)
			continue
		}
		if m[1] != want {
			t.Errorf("%s sets GOTOOLCHAIN=%s, go.mod's toolchain is %s", tc.file, m[1], want)
		}
	}
}

// goCommand matches a line of a shell script that runs the go command (or
// $GO, the Makefile's name for it), not a word that merely contains "go".
var goCommand = regexp.MustCompile(`(^|[\s;&|(]|\$\()(go|\$GO|\$\{GO\}) (build|test|run|list|mod|vet|install|env|version|generate|tool|get)\b`)

// Every script under hack/ that runs go sets the toolchain, by sourcing
// hack/lib/go.sh or a library that does.
func TestScriptsThatRunGoSourceTheToolchain(t *testing.T) {
	libs := []string{"hack/lib/go.sh", "hack/cluster/lib.sh", "hack/deploy/lib.sh"}
	for _, lib := range libs[1:] {
		if !strings.Contains(read(t, lib), `source "$ROOT/hack/lib/go.sh"`) {
			t.Errorf("%s does not source hack/lib/go.sh", lib)
		}
	}
	var checked int
	err := filepath.WalkDir(filepath.Join(root, "hack"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".sh") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		text := read(t, rel)
		runsGo := false
		for _, line := range strings.Split(text, "\n") {
			if l := strings.TrimSpace(line); !strings.HasPrefix(l, "#") && goCommand.MatchString(l) {
				runsGo = true
				break
			}
		}
		if !runsGo {
			return nil
		}
		checked++
		for _, lib := range libs {
			if strings.Contains(text, filepath.Base(filepath.Dir(lib))+"/"+filepath.Base(lib)) || rel == lib {
				return nil
			}
		}
		t.Errorf("%s runs go but sources none of %v: it would build with the machine's own Go", rel, libs)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Errorf("found %d scripts that run go; the pattern no longer finds them", checked)
	}
}

// Under make test (and .ci/run) the tests themselves run on that toolchain.
func TestTestsRunOnGoModsToolchain(t *testing.T) {
	if os.Getenv("GOTOOLCHAIN") == "" {
		t.Skip("GOTOOLCHAIN is not set: run with make (it exports it)")
	}
	if want := toolchain(t, "go.mod"); runtime.Version() != want {
		t.Errorf("this test binary was built with %s, go.mod's toolchain is %s", runtime.Version(), want)
	}
}

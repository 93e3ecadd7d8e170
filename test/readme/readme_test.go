// Package readme checks that README.md's shell commands work as written, and
// those of docs/install.md, where the README's install steps live.
//
// Every ```sh block in those files is preceded by a marker saying whether
// this test runs it:
//
//	<!-- readme-test: run -->
//	<!-- readme-test: skip: REASON -->
//	<!-- readme-test: run-except "PREFIX": REASON -->   (lines starting with PREFIX are left out)
//
// TestShellBlocksAreMarked (in make test-unit) fails on a block without a
// marker, so a new command is either run here or says why it cannot be.
// TestShellBlocksRun (make test-readme, ARCHFILTER_README_RUN=1) runs the
// runnable blocks in one bash, from the repository root, as a reader would
// paste them: README.md's in order, then docs/install.md's.
package readme

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// block is one fenced shell block of a Markdown file.
type block struct {
	line   int      // line of the opening fence, 1-based
	lines  []string // commands, indentation removed
	action string   // run, skip, run-except
	except string   // the line prefix left out by run-except
	reason string
}

var (
	fenceRE  = regexp.MustCompile("^```(sh|bash|shell|console)\\s*$")
	markerRE = regexp.MustCompile(`^<!-- readme-test: (run|skip|run-except)(?: "([^"]+)")?(?::\s*(.*?))?\s*-->$`)
)

// parse returns the shell blocks of a Markdown text with their markers. A
// block without a marker has action "".
func parse(text string) ([]block, error) {
	var (
		blocks  []block
		cur     *block
		indent  string
		prev    string
		lineNum int
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		lineNum++
		raw := sc.Text()
		trimmed := strings.TrimSpace(raw)
		if cur != nil {
			if trimmed == "```" {
				blocks = append(blocks, *cur)
				cur = nil
				continue
			}
			cur.lines = append(cur.lines, strings.TrimPrefix(raw, indent))
			continue
		}
		if fenceRE.MatchString(trimmed) {
			indent = raw[:len(raw)-len(strings.TrimLeft(raw, " "))]
			cur = &block{line: lineNum}
			if m := markerRE.FindStringSubmatch(prev); m != nil {
				cur.action, cur.except, cur.reason = m[1], m[2], m[3]
			}
		}
		if trimmed != "" {
			prev = trimmed
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: shell block not closed", cur.line)
	}
	return blocks, sc.Err()
}

// check reports what is wrong with a block's marker.
func (b block) check() error {
	switch {
	case b.action == "":
		return fmt.Errorf(`line %d: shell block without a marker: put <!-- readme-test: run --> or <!-- readme-test: skip: WHY --> on the line before it`, b.line)
	case b.action == "skip" && b.reason == "":
		return fmt.Errorf("line %d: skip needs a reason", b.line)
	case b.action == "run-except" && (b.except == "" || b.reason == ""):
		return fmt.Errorf(`line %d: run-except needs "PREFIX" and a reason`, b.line)
	case b.action == "run" && b.except != "":
		return fmt.Errorf(`line %d: run takes no prefix (run-except does)`, b.line)
	}
	return nil
}

// script is the block's commands as run: run-except leaves out the lines
// starting with its prefix.
func (b block) script() string {
	var out []string
	for _, l := range b.lines {
		if b.action == "run-except" && strings.HasPrefix(strings.TrimSpace(l), b.except) {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// files are the Markdown files whose shell blocks are marked and run, in the
// order they run: the README first (make demo), then the install guide,
// whose commands need the demo's cluster.
var files = []string{"README.md", "docs/install.md"}

func fileBlocks(t *testing.T, file string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), file))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parse(string(data))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return blocks
}

func TestShellBlocksAreMarked(t *testing.T) {
	for _, file := range files {
		blocks := fileBlocks(t, file)
		run := 0
		for _, b := range blocks {
			if err := b.check(); err != nil {
				t.Errorf("%s: %v", file, err)
			}
			if b.action != "skip" {
				run++
			}
		}
		if run == 0 {
			t.Errorf("%s: no shell block is run by this test (%d blocks)", file, len(blocks))
		}
	}
}

// TestReadmeOpensWithDemoAndTest: the README's first shell block is the
// setup and the two commands a newcomer runs, make demo then make test;
// test-readme runs make demo first, on which every later block relies.
func TestReadmeOpensWithDemoAndTest(t *testing.T) {
	blocks := fileBlocks(t, "README.md")
	if len(blocks) == 0 {
		t.Fatal("README.md: no shell block")
	}
	var cmds []string
	for _, l := range blocks[0].lines {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "make" {
			cmds = append(cmds, f[0]+" "+f[1])
		}
	}
	if want := []string{"make demo", "make test"}; !slices.Equal(cmds, want) {
		t.Errorf("README.md:%d: the first block runs %v, want %v", blocks[0].line, cmds, want)
	}
}

func TestParse(t *testing.T) {
	text := "intro\n<!-- readme-test: run -->\n```sh\necho a\n```\n\n" +
		"<!-- readme-test: skip: needs a kubeadm node -->\n\n```bash\nsudo x\n```\n" +
		"1. step\n\n   <!-- readme-test: run-except \"make test\": runs inside make test -->\n   ```sh\n   make demo\n   make test   # all\n   ```\n" +
		"```sh\nunmarked\n```\n```yaml\nnot: shell\n```\n"
	blocks, err := parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 4 {
		t.Fatalf("got %d blocks, want 4: %+v", len(blocks), blocks)
	}
	want := []struct {
		action, script string
		line           int
		ok             bool
	}{
		{"run", "echo a", 3, true},
		{"skip", "sudo x", 9, true},
		{"run-except", "make demo", 15, true},
		{"", "unmarked", 19, false},
	}
	for i, w := range want {
		b := blocks[i]
		if b.action != w.action || b.script() != w.script || b.line != w.line || (b.check() == nil) != w.ok {
			t.Errorf("block %d: got action %q script %q line %d check %v; want %q %q %d ok=%v",
				i, b.action, b.script(), b.line, b.check(), w.action, w.script, w.line, w.ok)
		}
	}
	if _, err := parse("```sh\necho\n"); err == nil {
		t.Error("an unclosed block parsed without error")
	}
	for _, bad := range []block{
		{action: "skip"},
		{action: "run-except", reason: "x"},
		{action: "run", except: "make"},
	} {
		if bad.check() == nil {
			t.Errorf("%+v: check passed, want an error", bad)
		}
	}
}

// TestShellBlocksRun runs README.md's runnable blocks (make test-readme).
func TestShellBlocksRun(t *testing.T) {
	if os.Getenv("ARCHFILTER_README_RUN") == "" {
		t.Skip("ARCHFILTER_README_RUN is not set: make test-readme runs README.md's commands")
	}
	root := repoRoot(t)
	var sb strings.Builder
	sb.WriteString("set -o errexit -o nounset -o pipefail\n")
	n := 0
	for _, file := range files {
		for _, b := range fileBlocks(t, file) {
			if err := b.check(); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if b.action == "skip" {
				t.Logf("%s:%d skipped: %s", file, b.line, b.reason)
				continue
			}
			n++
			fmt.Fprintf(&sb, "printf '\\n::: %s:%d\\n'\n%s\n", file, b.line, b.script())
		}
	}
	cmd := exec.Command("bash", "-c", sb.String())
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	t.Cleanup(func() {
		down := exec.Command("make", "--no-print-directory", "demo-down")
		down.Dir = root
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("make demo-down: %v\n%s", err, out)
		}
	})
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("the documented commands failed (the last ::: line above names the block): %v", err)
	}
	t.Logf("%d blocks of %s ran in %s", n, strings.Join(files, " and "), time.Since(start).Round(time.Second))
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEveryTargetIsDescribed keeps hack/fuzz/targets.tsv and the fuzz targets in step: a
// target nobody described would be a row of the table without its checks, a described
// target that no longer exists a row that lies.
func TestEveryTargetIsDescribed(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9_]*)\(`)
	var inTree []string
	for _, top := range []string{"apis", "cmd", "internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
				inTree = append(inTree, filepath.ToSlash(rel)+" "+m[1])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	targets, err := readTargets(filepath.Join(root, "hack", "fuzz", "targets.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var described []string
	for _, tg := range targets {
		described = append(described, tg.pkg+" "+tg.name)
		if tg.input == "" || tg.checks == "" || tg.found == "" {
			t.Errorf("targets.tsv: %s %s: every column must say something (found: \"none\" when none)", tg.pkg, tg.name)
		}
	}
	sort.Strings(inTree)
	sort.Strings(described)
	if diff := cmp.Diff(inTree, described); diff != "" {
		t.Errorf("hack/fuzz/targets.tsv does not describe exactly the fuzz targets of the tree (-in tree, +described):\n%s", diff)
	}
}

func TestTable(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "results.tsv")
	os.WriteFile(results, []byte("# fuzztime=5m parallel=2 commit=abc1234 go=go1.27.3 date=2026-11-28 16:40 UTC\n"+
		"package\ttarget\tseconds\texecs\tresult\tinput\n"+
		"pkg/a\tFuzzA\t301\t1234567\tok\t\n"+
		"pkg/b\tFuzzB\t12\t99\tFAIL\tpkg/b/testdata/fuzz/FuzzB/0123\n"), 0o644)
	targets := filepath.Join(dir, "targets.tsv")
	os.WriteFile(targets, []byte("package\ttarget\tinput\tchecks\tfound\n"+
		"pkg/a\tFuzzA\tthings\tround trip\tnone\n"+
		"pkg/b\tFuzzB\tother things\t≤ 1 MiB\tone: a loop, fixed\n"+
		"pkg/c\tFuzzC\tnew things\tagreement\tnone\n"), 0o644)
	doc := filepath.Join(dir, "doc.md")
	os.WriteFile(doc, []byte("# Doc\n\n"+beginMarker+"\nold table\n"+endMarker+"\n\nAfter.\n"), 0o644)

	if err := write(results, targets, doc); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(doc)
	for _, want := range []string{
		"Run: `make fuzz` with FUZZTIME=5m and 2 fuzzing process(es) per target, commit abc1234, go1.27.3, 2026-11-28 16:40 UTC.",
		"| `pkg/a` `FuzzA` | things | round trip | 1 234 567 (5m01s) | none |",
		"| `pkg/b` `FuzzB` | other things | ≤ 1 MiB | 99 (12s), **failed**: input `pkg/b/testdata/fuzz/FuzzB/0123` | one: a loop, fixed |",
		"| `pkg/c` `FuzzC` | new things | agreement | not run | none |",
		"3 targets, 1 234 666 executions in all.",
		"\nAfter.\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("document lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "old table") {
		t.Errorf("the old table is still there:\n%s", got)
	}

	// Two runs: each row from the last run that has it, the runs named.
	second := filepath.Join(dir, "second.tsv")
	os.WriteFile(second, []byte("# fuzztime=5m parallel=1 jobs=2 commit=def5678 go=go1.27.3 date=2026-11-28 17:00 UTC\n"+
		"package\ttarget\tseconds\texecs\tresult\tinput\n"+
		"pkg/b\tFuzzB\t300\t5000\tok\t\n"), 0o644)
	os.WriteFile(doc, []byte(beginMarker+"\n"+endMarker+"\n"), 0o644)
	if err := write(results+","+second, targets, doc); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(doc)
	for _, want := range []string{
		"Run A: `make fuzz` with FUZZTIME=5m and 2 fuzzing process(es) per target, commit abc1234",
		"Run B: `make fuzz` with FUZZTIME=5m and 1 fuzzing process(es) per target, 2 targets at a time, commit def5678",
		"| `pkg/a` `FuzzA` | things | round trip | 1 234 567 (5m01s, run A) | none |",
		"| `pkg/b` `FuzzB` | other things | ≤ 1 MiB | 5 000 (5m00s, run B) | one: a loop, fixed |",
		"3 targets, 1 239 567 executions in all.",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("combined document lacks %q:\n%s", want, got)
		}
	}

	os.WriteFile(doc, []byte("# no markers\n"), 0o644)
	if err := write(results, targets, doc); err == nil || !strings.Contains(err.Error(), "markers") {
		t.Errorf("a document without markers: err = %v, want one naming the markers", err)
	}
}

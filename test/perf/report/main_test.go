package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	acceptClean  = "BenchmarkFilter/accept-2 \t 9227835 \t 108.7 ns/op \t 0 B/op \t 0 allocs/op\n"
	acceptAllocs = "BenchmarkFilter/accept-2 \t 9227835 \t 130.2 ns/op \t 16 B/op \t 1 allocs/op\n"
	coldPerf     = "BenchmarkPerfScheduling/ColdCache_ArchFilter/50Nodes_100Pods-2 \t 1 \t 0 extra-attempts \t 100 held-pods \t 0 fail-open\n"
)

// TestRun drives the command as bench.sh does: files in, verdict or document out.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clean, allocs, perf := write("clean.txt", acceptClean), write("allocs.txt", acceptAllocs), write("perf.txt", coldPerf)
	machine := write("machine.txt", "date\t2026-11-24 19:00 UTC\n")
	doc := filepath.Join(dir, "benchmarks.md")
	tests := []struct {
		name string
		o    options
		// wantErr and wantOut are parts of the error (empty: none) and of stdout.
		wantErr, wantOut string
		wantDoc          string // part of the document written to doc
	}{
		{
			name:    "smoke passes",
			o:       options{scale: "smoke", smoke: true, micro: clean, perf: perf},
			wantOut: "ok:   ColdCache_ArchFilter resolved every image",
		},
		{
			name:    "smoke fails when Filter allocates",
			o:       options{scale: "smoke", smoke: true, micro: allocs, perf: perf},
			wantErr: "1 smoke check(s) failed",
			wantOut: "FAIL: ArchFilter Filter allocates nothing on the accept path (allocs/op: 1, found: true)",
		},
		{
			name:    "summary on stdout only",
			o:       options{scale: "smoke", micro: clean, perf: perf},
			wantOut: "| ArchFilter Filter, node accepted | 109 ns/op, 0 allocs/op, 0 B/op | 0 allocs/op | met |",
		},
		{
			name: "document written, a missing benchstat file shown as such",
			o: options{scale: "smoke", micro: clean, perf: perf, machine: machine,
				microStat: filepath.Join(dir, "absent.benchstat"), out: doc},
			wantOut: "| **Micro-benchmarks (per call, median)** | | | |",
			wantDoc: "Measured on 2026-11-24 19:00 UTC with `BENCH_SCALE=smoke`: 50 nodes, 100 pods per workload (CI smoke).",
		},
		{
			name:    "unknown scale",
			o:       options{scale: "medium", micro: clean},
			wantErr: `unknown scale "medium"`,
		},
		{
			name:    "an input that cannot be read",
			o:       options{scale: "smoke", smoke: true, micro: filepath.Join(dir, "absent.txt")},
			wantErr: "absent.txt",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(doc)
			var out strings.Builder
			err := run(tc.o, &out)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("run: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("run error = %v, want one containing %q", err, tc.wantErr)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantOut, out.String())
			}
			b, err := os.ReadFile(doc)
			switch {
			case tc.o.out == "" && err == nil:
				t.Errorf("a document was written without -out")
			case tc.o.out != "" && err != nil:
				t.Fatalf("no document: %v", err)
			case tc.o.out != "":
				if !strings.Contains(string(b), tc.wantDoc) {
					t.Errorf("document lacks %q", tc.wantDoc)
				}
				if !strings.Contains(string(b), "absent.benchstat: no such file or directory)") {
					t.Errorf("document does not say the micro benchstat file is missing")
				}
			}
		})
	}
}

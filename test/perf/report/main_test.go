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
	coldPerf     = "BenchmarkPerfScheduling/ColdCache_ArchFilter/50Nodes_100Pods-2 \t 1 \t 0 extra-attempts \t 100 held-pods \t 0 fail-open\n" +
		"BenchmarkPerfScheduling/Batching_HostPort_Default/50Nodes-2 \t 1 \t 0.96 batch-hint-used/pod\n" +
		"BenchmarkPerfScheduling/Batching_HostPort_ArchFilter/50Nodes-2 \t 1 \t 0.96 batch-hint-used/pod\n"
)

// TestRun drives the command as bench.sh does: files in, verdict or document out.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clean, allocs, perf := write("clean.txt", acceptClean), write("allocs.txt", acceptAllocs), write("perf.txt", coldPerf)
	machine := write("machine.txt", "date\t2026-11-24 19:00 UTC\n")
	doc := filepath.Join(dir, "benchmarks.md")
	// Run directories as bench.sh leaves them: one with run.env, one from before run.env
	// (its scale only in machine.txt), and broken ones.
	write("full/run.env", "BENCH_SCALE=full\nBENCH_LABELS=archfilter,-cache\nBENCH_ROUNDS=3\nBENCH_COMMIT=2eca7ed-dirty\n")
	write("full/machine.txt", "date\t2026-11-26 07:55 UTC\nscale\tBENCH_SCALE=full, 3 round(s) of the workloads labelled archfilter,-cache\n")
	write("full/perf.txt", strings.ReplaceAll(coldPerf, "50Nodes_100Pods", "5000Nodes_10000Pods"))
	write("full/profile-top.txt", "flat flat%\n")
	write("old/machine.txt", "date\t2026-11-26 04:58 UTC\nscale\tBENCH_SCALE=small, 5 round(s) of every workload, micro-benchmarks -count 6\n")
	write("old/micro.txt", acceptClean)
	write("unfinished/micro.txt", acceptClean)
	write("microonly/run.env", "BENCH_SCALE=small\nBENCH_PERF=false\nBENCH_ROUNDS=5\nBENCH_COMMIT=2eca7ed\n")
	write("microonly/machine.txt", "date\t2026-11-26 08:10 UTC\n")
	write("microonly/micro.txt", acceptClean)
	write("noscale/machine.txt", "date\t2026-11-26 04:58 UTC\n")
	write("noscale/micro.txt", acceptClean)
	write("empty/machine.txt", "date\t2026-11-26 04:58 UTC\nscale\tBENCH_SCALE=small, 5 round(s)\n")
	full, old := filepath.Join(dir, "full"), filepath.Join(dir, "old")
	tests := []struct {
		name string
		o    options
		// wantErr and wantOut are parts of the error (empty: none) and of stdout.
		wantErr, wantOut string
		wantDoc          []string // parts of the document written to doc
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
			wantDoc: []string{
				"Measured on 2026-11-24 19:00 UTC with `BENCH_SCALE=smoke`: 50 nodes, 100 pods per workload (CI smoke).",
				"absent.benchstat: no such file or directory)",
			},
		},
		{
			name:    "run directories: one document, each row from one run",
			o:       options{dirs: []string{full, old}, out: doc},
			wantOut: "| ArchFilter Filter, node accepted | 109 ns/op, 0 allocs/op, 0 B/op | 0 allocs/op | met | B |",
			wantDoc: []string{
				"This document combines 2 runs",
				"- **Run A** (`full`): `BENCH_SCALE=full`, 5 000 nodes, 10 000 pods per workload (the issue's figures); " +
					"`BENCH_LABELS=archfilter,-cache`; 3 rounds; commit 2eca7ed-dirty; finished 2026-11-26 07:55 UTC.",
				"- **Run B** (`old`): `BENCH_SCALE=small`, 500 nodes, 2 000 pods per workload; 5 rounds; finished 2026-11-26 04:58 UTC.",
				"| scheduling cycles spent on held pods (attempts beyond one per pod) | 0 over 1 runs (100 pods held at PreEnqueue) | 0 | met | A |",
				"From run A: `BENCH_SCALE=full`",
				"micro.benchstat: no such file or directory)",
			},
		},
		{
			name:    "a run without scheduler_perf gives the micro-benchmarks, the other the workloads",
			o:       options{dirs: []string{full, filepath.Join(dir, "microonly")}, out: doc},
			wantOut: "| ArchFilter Filter, node accepted | 109 ns/op, 0 allocs/op, 0 B/op | 0 allocs/op | met | B |",
			wantDoc: []string{
				"- **Run B** (`microonly`): `BENCH_SCALE=small`, 500 nodes, 2 000 pods per workload; no scheduler_perf workload (`BENCH_PERF=false`); 5 rounds; commit 2eca7ed",
				"| scheduling cycles spent on held pods (attempts beyond one per pod) | 0 over 1 runs (100 pods held at PreEnqueue) | 0 | met | A |",
			},
		},
		{
			name:    "a run directory without run.env: the scale from machine.txt",
			o:       options{dirs: []string{old}, out: doc},
			wantDoc: []string{"Measured on 2026-11-26 04:58 UTC with `BENCH_SCALE=small`"},
		},
		{
			name:    "a run directory that has not finished",
			o:       options{dirs: []string{old, filepath.Join(dir, "unfinished")}},
			wantErr: "unfinished: no machine.txt",
		},
		{
			name:    "a run directory that does not say its scale",
			o:       options{dirs: []string{filepath.Join(dir, "noscale")}},
			wantErr: "neither run.env nor machine.txt's scale line says its BENCH_SCALE",
		},
		{
			name:    "a run directory without results",
			o:       options{dirs: []string{filepath.Join(dir, "empty")}},
			wantErr: "neither micro.txt nor perf.txt",
		},
		{
			name:    "run directories and files together",
			o:       options{dirs: []string{old}, micro: clean},
			wantErr: "not both",
		},
		{
			name:    "smoke judges one run",
			o:       options{dirs: []string{full, old}, smoke: true},
			wantErr: "-smoke judges one run, not 2",
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
				for _, w := range tc.wantDoc {
					if !strings.Contains(string(b), w) {
						t.Errorf("document lacks %q", w)
					}
				}
			}
		})
	}
}

func TestScaleFromMachine(t *testing.T) {
	tests := []struct {
		name, machine, wantScale, wantRounds string
	}{
		{
			name:      "bench.sh's scale line",
			machine:   "date\t2026-11-26 04:58 UTC\nscale\tBENCH_SCALE=full, 5 round(s) of every workload, micro-benchmarks -count 6\nCPU\tx\n",
			wantScale: "full", wantRounds: "5",
		},
		{
			name:      "with labels",
			machine:   "scale\tBENCH_SCALE=small, 3 round(s) of the workloads labelled archfilter,-variant, micro-benchmarks -count 6",
			wantScale: "small", wantRounds: "3",
		},
		{
			name:      "no rounds",
			machine:   "scale\tBENCH_SCALE=smoke",
			wantScale: "smoke",
		},
		{
			name:    "no scale line",
			machine: "date\t2026-11-26 04:58 UTC\nkernel\tLinux BENCH_SCALE=full\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scale, rounds := scaleFromMachine(tc.machine)
			if scale != tc.wantScale || rounds != tc.wantRounds {
				t.Errorf("scaleFromMachine = %q, %q; want %q, %q", scale, rounds, tc.wantScale, tc.wantRounds)
			}
		})
	}
}

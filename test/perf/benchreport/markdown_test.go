package benchreport

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/small/benchmarks.md from the current code")

func TestTable(t *testing.T) {
	tests := []struct {
		name      string
		rows      []Row
		runColumn bool
		want      string
	}{
		{
			name: "no rows",
			want: "| measurement | result | target | status |\n|---|---|---|---|\n",
		},
		{
			name: "a heading per section, a dash for no target, pipes escaped",
			rows: []Row{
				{Section: "A", Measurement: "one", Result: "1 pods/s", Target: "≥ 0.98", Status: Met},
				{Section: "A", Measurement: "two", Result: "no result", Status: NoData},
				{Section: "B | C", Measurement: "x|y", Result: "a | b", Status: NoCheck, Note: "notes are not in the table"},
			},
			want: "| measurement | result | target | status |\n|---|---|---|---|\n" +
				"| **A** | | | |\n" +
				"| one | 1 pods/s | ≥ 0.98 | met |\n" +
				"| two | no result | — | **no data** |\n" +
				"| **B \\| C** | | | |\n" +
				"| x\\|y | a \\| b | — | — |\n",
		},
		{
			name: "with the run column: each row's run, a dash for none",
			rows: []Row{
				{Section: "A", Measurement: "one", Result: "1 pods/s", Target: "≥ 0.98", Status: Met, Run: "B"},
				{Section: "A", Measurement: "two", Result: "no result", Status: NoData},
			},
			runColumn: true,
			want: "| measurement | result | target | status | run |\n|---|---|---|---|---|\n" +
				"| **A** | | | | |\n" +
				"| one | 1 pods/s | ≥ 0.98 | met | B |\n" +
				"| two | no result | — | **no data** | — |\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Table(tc.rows, tc.runColumn)); diff != "" {
				t.Errorf("Table (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestMachineFacts(t *testing.T) {
	got := machineFacts("date\t2026-11-24 19:00 UTC\nno tab here\ncores (nproc)\t2\n\nkernel\tLinux 6.1\textra\n")
	want := [][2]string{{"date", "2026-11-24 19:00 UTC"}, {"cores (nproc)", "2"}, {"kernel", "Linux 6.1\textra"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("machineFacts (-want,+got):\n%s", diff)
	}
}

// TestDocumentGolden renders docs/benchmarks.md from testdata/small, go test -bench
// output made from a bench-smoke run (workload names of the small scale, values
// varied over three rounds, registry-outage workloads and failures added), and
// compares it with testdata/small/benchmarks.md: what hack/bench/report wrote from
// the same files before the report moved here, but for the generated-by comment's
// path. Run with -update after a deliberate change of the document, and read the diff.
func TestDocumentGolden(t *testing.T) {
	r := parseFiles(t, "small/micro.txt", "small/perf.txt")
	machine, err := os.ReadFile(filepath.Join("testdata", "small", "machine.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := LookupScale("small")
	if err != nil {
		t.Fatal(err)
	}
	runs := []*Run{{
		ID:             "A",
		Scale:          sc,
		Results:        r,
		Machine:        strings.TrimRight(string(machine), "\n"),
		MicroBenchstat: "goos: linux\nsec/op stuff",
		PerfBenchstat:  "perf stat",
	}}
	rows := Summary(runs)
	got := Document(runs, rows)
	golden := filepath.Join("testdata", "small", "benchmarks.md")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("Document (-want,+got):\n%s", diff)
	}
	// The summary also goes to stdout on its own: the document carries it unchanged.
	if !strings.Contains(got, "\n## Summary\n") || !strings.Contains(got, Table(rows, false)) {
		t.Error("the document does not carry the summary table")
	}
}

func TestDocumentProfile(t *testing.T) {
	sc, err := LookupScale("small")
	if err != nil {
		t.Fatal(err)
	}
	without := Document([]*Run{{ID: "A", Scale: sc, Results: NewResults()}}, nil)
	if strings.Contains(without, "Where the CPU goes") {
		t.Error("a run without a profile has a profile section")
	}
	with := Document([]*Run{{ID: "A", Scale: sc, Results: NewResults(), ProfileTop: "flat  flat%\n 1s 10% main.x\n",
		ProfileArchFilter: " 2s 20% archfilter.(*ArchFilter).Filter\n"}}, nil)
	for _, want := range []string{"## Where the CPU goes", "archfilter.(*ArchFilter).Filter", "main.x"} {
		if !strings.Contains(with, want) {
			t.Errorf("the document lacks %q", want)
		}
	}
	if strings.Index(with, "archfilter.(*ArchFilter).Filter") > strings.Index(with, "main.x") {
		t.Error("ArchFilter's table should come before the whole process's")
	}
}

// Command report turns the output of archfilter's benchmarks (go test -bench) into
// docs/benchmarks.md, or checks bench-smoke's gates. hack/bench/bench.sh runs it; it
// reads the files it is given and writes the document (or, with -smoke, a verdict).
// The parsing, the targets, the gates and the document are package benchreport's.
//
//	report -scale small -micro micro.txt -perf perf.txt -machine machine.txt \
//	       -micro-benchstat micro.benchstat -perf-benchstat perf.benchstat -out docs/benchmarks.md
//	report -smoke -scale smoke -micro micro.txt -perf perf.txt
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/archfilter/archfilter/test/perf/benchreport"
)

func main() {
	var o options
	flag.StringVar(&o.scale, "scale", "small", "BENCH_SCALE of the run: smoke, small or full")
	flag.StringVar(&o.micro, "micro", "", "go test -bench output of the micro-benchmarks")
	flag.StringVar(&o.perf, "perf", "", "go test -bench output of BenchmarkPerfScheduling")
	flag.StringVar(&o.microStat, "micro-benchstat", "", "benchstat output of the micro-benchmarks")
	flag.StringVar(&o.perfStat, "perf-benchstat", "", "benchstat output of BenchmarkPerfScheduling")
	flag.StringVar(&o.machine, "machine", "", "machine description: one \"key<TAB>value\" per line")
	flag.StringVar(&o.profileTop, "profile-top", "", "go tool pprof -top of the scheduler_perf run's CPU profile")
	flag.StringVar(&o.profileArchFilter, "profile-archfilter", "", "the same, focused on ArchFilter's functions")
	flag.StringVar(&o.out, "out", "", "write the document here (default: summary on stdout only)")
	flag.BoolVar(&o.smoke, "smoke", false, "check bench-smoke's gates instead of writing the document")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

type options struct {
	scale, micro, perf, microStat, perfStat, machine, out string
	profileTop, profileArchFilter                         string
	smoke                                                 bool
}

func run(o options, stdout io.Writer) error {
	sc, err := benchreport.LookupScale(o.scale)
	if err != nil {
		return err
	}
	res := benchreport.NewResults()
	for _, path := range []string{o.micro, o.perf} {
		if path == "" {
			continue
		}
		if err := parseFile(res, path); err != nil {
			return err
		}
	}
	if o.smoke {
		return benchreport.Smoke(res, sc.Workload, stdout)
	}
	rows := benchreport.Summary(res, sc.Workload)
	fmt.Fprintln(stdout, benchreport.Table(rows))
	if o.out == "" {
		return nil
	}
	doc := benchreport.Document(benchreport.Run{
		Scale:             sc,
		Machine:           readOptional(o.machine),
		MicroBenchstat:    readOptional(o.microStat),
		PerfBenchstat:     readOptional(o.perfStat),
		ProfileTop:        readOptional(o.profileTop),
		ProfileArchFilter: readOptional(o.profileArchFilter),
	}, res, rows)
	return os.WriteFile(o.out, []byte(doc), 0o644)
}

func parseFile(res *benchreport.Results, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := res.Parse(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readOptional returns a file's text without its final newlines, or the error in
// parentheses: the document shows what is missing rather than failing.
func readOptional(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return strings.TrimRight(string(b), "\n")
}

// Command report turns the output of archfilter's benchmarks (go test -bench) into
// docs/benchmarks.md, or checks bench-smoke's gates. hack/bench/bench.sh runs it; it
// reads the run directories or files it is given and writes the document (or, with
// -smoke, a verdict). The parsing, the choice of run per row, the targets, the gates
// and the document are package benchreport's.
//
//	report -out docs/benchmarks.md RUN_DIR [RUN_DIR...]
//	report -smoke -scale smoke -micro micro.txt -perf perf.txt
//	report -scale small -micro micro.txt -perf perf.txt -machine machine.txt \
//	       -micro-benchstat micro.benchstat -perf-benchstat perf.benchstat -out docs/benchmarks.md
//
// A run directory is what one hack/bench/bench.sh run wrote (.cache/bench/<scale>-<time>):
// micro.txt, perf.txt, machine.txt, run.env (older runs lack it: their scale is read
// from machine.txt), the benchstat outputs and the CPU profile's tables. Given several,
// the document combines them, each comparison within one run. The file flags give
// one run file by file, as bench-smoke does.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: report [-out FILE] RUN_DIR...\n"+
			"       report [-smoke] [-scale S] -micro FILE -perf FILE [-machine FILE ...] [-out FILE]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	o.dirs = flag.Args()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

type options struct {
	scale, micro, perf, microStat, perfStat, machine, out string
	profileTop, profileArchFilter                         string
	smoke                                                 bool
	// dirs are run directories, the arguments: given, the file flags are not.
	dirs []string
}

func run(o options, stdout io.Writer) error {
	runs, err := loadRuns(o)
	if err != nil {
		return err
	}
	if o.smoke {
		if len(runs) != 1 {
			return fmt.Errorf("-smoke judges one run, not %d", len(runs))
		}
		return benchreport.Smoke(runs[0].Results, runs[0].Scale.Workload, stdout)
	}
	rows := benchreport.Summary(runs)
	fmt.Fprintln(stdout, benchreport.Table(rows, len(runs) > 1))
	if o.out == "" {
		return nil
	}
	return os.WriteFile(o.out, []byte(benchreport.Document(runs, rows)), 0o644)
}

// loadRuns reads the run directories, or the one run the file flags give.
func loadRuns(o options) ([]*benchreport.Run, error) {
	if len(o.dirs) == 0 {
		run, err := runFromFiles(o)
		if err != nil {
			return nil, err
		}
		run.ID, _ = benchreport.RunID(0)
		return []*benchreport.Run{run}, nil
	}
	for _, f := range []string{o.micro, o.perf, o.microStat, o.perfStat, o.machine, o.profileTop, o.profileArchFilter} {
		if f != "" {
			return nil, fmt.Errorf("give run directories or files (-micro, -perf…), not both")
		}
	}
	var runs []*benchreport.Run
	for i, dir := range o.dirs {
		run, err := loadRun(dir)
		if err != nil {
			return nil, err
		}
		if run.ID, err = benchreport.RunID(i); err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// runFromFiles is the run the file flags give, at -scale.
func runFromFiles(o options) (*benchreport.Run, error) {
	sc, err := benchreport.LookupScale(o.scale)
	if err != nil {
		return nil, err
	}
	res := benchreport.NewResults()
	for _, path := range []string{o.micro, o.perf} {
		if path == "" {
			continue
		}
		if err := parseFile(res, path); err != nil {
			return nil, err
		}
	}
	return &benchreport.Run{
		Scale:             sc,
		Results:           res,
		Machine:           readOptional(o.machine),
		MicroBenchstat:    readOptional(o.microStat),
		PerfBenchstat:     readOptional(o.perfStat),
		ProfileTop:        readOptional(o.profileTop),
		ProfileArchFilter: readOptional(o.profileArchFilter),
	}, nil
}

// loadRun reads a run directory of hack/bench/bench.sh. It must have finished
// (machine.txt, written last, exists) and measured something (micro.txt or perf.txt).
// Its scale, labels, rounds and commit come from run.env or, for runs older than
// run.env, the scale and rounds from machine.txt's scale line.
func loadRun(dir string) (*benchreport.Run, error) {
	path := func(name string) string { return filepath.Join(dir, name) }
	machine, err := os.ReadFile(path("machine.txt"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: no machine.txt, which bench.sh writes once the benchmarks are done", dir)
	case err != nil:
		return nil, err
	}
	run := &benchreport.Run{Dir: filepath.Base(filepath.Clean(dir)), Machine: strings.TrimRight(string(machine), "\n")}
	env, err := readEnv(path("run.env"))
	switch {
	case err == nil:
		run.Recorded = true
		run.Labels, run.Rounds, run.Commit = env["BENCH_LABELS"], env["BENCH_ROUNDS"], env["BENCH_COMMIT"]
		run.NoPerf = env["BENCH_PERF"] == "false"
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	scale, rounds := scaleFromMachine(run.Machine)
	if s := env["BENCH_SCALE"]; s != "" {
		scale = s
	}
	if run.Rounds == "" {
		run.Rounds = rounds
	}
	if scale == "" {
		return nil, fmt.Errorf("%s: neither run.env nor machine.txt's scale line says its BENCH_SCALE", dir)
	}
	if run.Scale, err = benchreport.LookupScale(scale); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	run.Results = benchreport.NewResults()
	parsed := 0
	for _, name := range []string{"micro.txt", "perf.txt"} {
		err := parseFile(run.Results, path(name))
		switch {
		case err == nil:
			parsed++
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	if parsed == 0 {
		return nil, fmt.Errorf("%s: neither micro.txt nor perf.txt", dir)
	}
	run.MicroBenchstat = readOptional(path("micro.benchstat"))
	run.PerfBenchstat = readOptional(path("perf.benchstat"))
	// A run without a CPU profile has no tables: not something missing.
	run.ProfileTop = readIfExists(path("profile-top.txt"))
	run.ProfileArchFilter = readIfExists(path("profile-archfilter.txt"))
	run.CycleProfileLog = readIfExists(path("cycle-profile.log"))
	run.CycleProfileArchFilter = readIfExists(path("cycle-profile-archfilter.txt"))
	return run, nil
}

// readEnv reads run.env: KEY=value lines, as bench.sh writes them (no quoting).
func readEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return env, nil
}

// scaleLine is machine.txt's scale line: "scale<TAB>BENCH_SCALE=full, 5 round(s) …".
var scaleLine = regexp.MustCompile(`(?m)^scale\tBENCH_SCALE=(\w+)(?:, (\d+) round)?`)

// scaleFromMachine returns the BENCH_SCALE and rounds machine.txt's scale line names,
// empty where it does not.
func scaleFromMachine(machine string) (scale, rounds string) {
	m := scaleLine.FindStringSubmatch(machine)
	if m == nil {
		return "", ""
	}
	return m[1], m[2]
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

// readIfExists returns a file's text without its final newlines, or "" if there is
// no such file; another error is shown in parentheses, as readOptional does.
func readIfExists(path string) string {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return readOptional(path)
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

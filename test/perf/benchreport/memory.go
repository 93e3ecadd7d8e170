package benchreport

import (
	"fmt"
	"strconv"
	"strings"
)

// schedulerMemoryPrefix starts the names of test/perf/cycle's BenchmarkSchedulerMemory
// results: "BenchmarkSchedulerMemory/images=<n>".
const schedulerMemoryPrefix = "BenchmarkSchedulerMemory/images="

// schedulerMemoryCounts are the image counts BenchmarkSchedulerMemory measured, ascending.
func schedulerMemoryCounts(r *Results) []int {
	return countsAfter(r, schedulerMemoryPrefix, "rss-MiB")
}

// schedulerMemoryRows is the scheduler process's memory with ArchFilter over 5 000
// nodes as its cache fills with distinct images: resident set and live heap at each
// count, and the growth per image from the first count (none cached); no row when
// the run did not measure it.
func schedulerMemoryRows(r *Results) []Row {
	counts := schedulerMemoryCounts(r)
	if len(counts) == 0 {
		return nil
	}
	name := func(n int) string { return schedulerMemoryPrefix + strconv.Itoa(n) }
	base := counts[0]
	rss0, _ := r.median(name(base), "rss-MiB")
	heap0, _ := r.median(name(base), "heap-MiB")
	var parts []string
	for _, n := range counts {
		rss, _ := r.median(name(n), "rss-MiB")
		heap, _ := r.median(name(n), "heap-MiB")
		part := fmt.Sprintf("%s images: RSS %s MiB, live heap %s MiB", nodeCount(n), f0(rss), f0(heap))
		if n > base {
			part += fmt.Sprintf(" (+%s MiB RSS, +%s MiB heap: %s B of heap per image)", f1(rss-rss0), f1(heap-heap0),
				f0((heap-heap0)*(1<<20)/float64(n-base)))
		}
		parts = append(parts, part)
	}
	return []Row{{Section: curveSection, Status: NoCheck,
		Measurement: "scheduler process memory with ArchFilter over 5 000 nodes against distinct images cached " +
			"(the process also holds the fake API server's copy of the nodes: the growth is what the images cost)",
		Result: strings.Join(parts, "; ")}}
}

package benchreport

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// micro describes one micro-benchmark row.
type micro struct {
	name, label string
	zeroAllocs  bool // target: 0 allocs/op
}

// micros are the micro-benchmarks of pkg/plugins/archfilter and pkg/resolver the
// summary shows, in its order.
var micros = []micro{
	{"BenchmarkFilter/accept", "ArchFilter Filter, node accepted", true},
	{"BenchmarkFilter/reject", "ArchFilter Filter, node rejected", true},
	{"BenchmarkNodeAffinityFilter/accept", "in-tree NodeAffinity Filter, accepted (reference)", false},
	{"BenchmarkNodeAffinityFilter/reject", "in-tree NodeAffinity Filter, rejected (reference)", false},
	{"BenchmarkFilter/accept-parallel16", "ArchFilter Filter, node accepted, 16 goroutines (the scheduler's parallelism)", false},
	{"BenchmarkFilter/reject-parallel16", "ArchFilter Filter, node rejected, 16 goroutines", false},
	{"BenchmarkNodeAffinityFilter/accept-parallel16", "in-tree NodeAffinity Filter, accepted, 16 goroutines (reference)", false},
	{"BenchmarkNodeAffinityFilter/reject-parallel16", "in-tree NodeAffinity Filter, rejected, 16 goroutines (reference)", false},
	{"BenchmarkFilterClusterScan/table", "ArchFilter Filter, each call another of 5 000 nodes (platform table)", false},
	{"BenchmarkFilterClusterScan/labels", "ArchFilter Filter, each call another of 5 000 nodes, read from labels (fallback)", false},
	{"BenchmarkFilterClusterScan/nodeaffinity", "in-tree NodeAffinity Filter, each call another of 5 000 nodes (reference)", false},
	{"BenchmarkPreFilterWarm/minority", "PreFilter, warm, minority platform (PreFilterResult)", false},
	{"BenchmarkPreFilterWarm/majority", "PreFilter, warm, majority platforms", false},
	{"BenchmarkPreFilterWarm/everywhere", "PreFilter, warm, runs on every platform", false},
	{"BenchmarkPreEnqueueWarm", "PreEnqueue, warm (3 images)", false},
	{"BenchmarkScore/preferred", "Score, preferred platform", false},
	{"BenchmarkScore/other", "Score, no preference matches", false},
	{"BenchmarkScore/normalize", "NormalizeScore, 6 nodes", false},
	{"BenchmarkLookupWarm", "resolver Lookup, warm, anonymous", true},
	{"BenchmarkLookupWarmWithCredentials", "resolver Lookup, warm, with credentials", true},
}

// cacheMemoryTarget is the resolver cache's goal per resolved image, in bytes.
const cacheMemoryTarget = 512

// cacheMemoryNote says where a missed memory goal is explained.
const cacheMemoryNote = "What an image keeps alive, entry by entry, is in [design](design.md#resolver), " +
	"\"What a cached image costs\"; BenchmarkCacheMemory's comment (pkg/resolver) has the sizes."

// microSection is the summary section of the micro-benchmark rows.
const microSection = "Micro-benchmarks (per call, median)"

func microRows(r *Results) []Row {
	const section = microSection
	var rows []Row
	for _, m := range micros {
		t, ok := r.median(m.name, "ns/op")
		if !ok {
			rows = append(rows, Row{Section: section, Measurement: m.label, Result: "no result (" + m.name + ")", Status: NoData})
			continue
		}
		a, _ := r.median(m.name, "allocs/op")
		by, _ := r.median(m.name, "B/op")
		rw := Row{Section: section, Measurement: m.label,
			Result: fmt.Sprintf("%s/op, %s allocs/op, %s B/op", ns(t), f0(a), f0(by)), Status: NoCheck}
		if m.zeroAllocs {
			rw.Target = "0 allocs/op"
			rw.Status = Met
			if a > 0 {
				rw.Status = Missed
				rw.Note = m.name + " allocates: the hot path is supposed to read memory only."
			}
		}
		rows = append(rows, rw)
	}
	for _, kind := range []string{"tag", "digest"} {
		n := "BenchmarkCacheMemory/" + kind
		img, ok := r.median(n, "B/image")
		if !ok {
			rows = append(rows, Row{Section: section, Measurement: "cache memory (" + kind + ")", Result: "no result", Status: NoData})
			continue
		}
		entry, _ := r.median(n, "B/entry")
		rw := Row{Section: section, Measurement: "resolver cache memory, image by " + kind,
			Result: fmt.Sprintf("%s B per image, %s B per cache entry (%s MiB for cache.maxEntries 100 000)",
				f0(img), f0(entry), f1(entry*100000/(1<<20))),
			Target: fmt.Sprintf("≤ %d B per image", cacheMemoryTarget), Status: Met}
		if img > cacheMemoryTarget {
			rw.Status = Missed
			rw.Note = fmt.Sprintf("%s B per image by %s against a target of %d B. %s", f0(img), kind, cacheMemoryTarget, cacheMemoryNote)
		}
		rows = append(rows, rw)
	}
	for _, kind := range []string{"tag", "digest"} {
		if rw, ok := cacheCurveRow(r, kind); ok {
			rows = append(rows, rw)
		}
	}
	for _, c := range []struct{ label, archFilter, nodeAffinity string }{
		{"Filter accept: NodeAffinity / ArchFilter", "BenchmarkFilter/accept", "BenchmarkNodeAffinityFilter/accept"},
		{"Filter on 5 000 nodes: NodeAffinity / ArchFilter", "BenchmarkFilterClusterScan/table", "BenchmarkFilterClusterScan/nodeaffinity"},
	} {
		fa, ok1 := r.median(c.archFilter, "ns/op")
		na, ok2 := r.median(c.nodeAffinity, "ns/op")
		if ok1 && ok2 && fa > 0 {
			rows = append(rows, Row{Section: section, Measurement: c.label, Result: f2(na/fa) + "×", Status: NoCheck})
		}
	}
	return rows
}

// cacheMemoryImages is how many images BenchmarkCacheMemory/<kind> stores; its
// sub-benchmarks <kind>-<n> store n.
const cacheMemoryImages = 10000

// cacheCurve lists the image counts BenchmarkCacheMemory measured for kind (tag or
// digest), ascending, and the benchmark of each.
func cacheCurve(r *Results, kind string) (counts []int, names map[int]string) {
	names = map[int]string{}
	prefix := "BenchmarkCacheMemory/" + kind
	for _, name := range r.names() {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		n := cacheMemoryImages
		if rest != "" {
			var err error
			if n, err = strconv.Atoi(strings.TrimPrefix(rest, "-")); err != nil || !strings.HasPrefix(rest, "-") {
				continue
			}
		}
		if _, ok := r.median(name, "B/image"); ok {
			names[n] = name
			counts = append(counts, n)
		}
	}
	slices.Sort(counts)
	return counts, names
}

// cacheCurveRow is the resolver cache's memory at each number of distinct images
// cached, and how it grows: a row only when at least two counts were measured.
func cacheCurveRow(r *Results, kind string) (Row, bool) {
	counts, names := cacheCurve(r, kind)
	if len(counts) < 2 {
		return Row{}, false
	}
	var parts []string
	for _, n := range counts {
		img, _ := r.median(names[n], "B/image")
		total, ok := r.median(names[n], "heap-B")
		if !ok {
			total = img * float64(n)
		}
		parts = append(parts, fmt.Sprintf("%s images: %s B per image, %s MiB in all", nodeCount(n), f0(img), f1(total/(1<<20))))
	}
	lo, hi := counts[0], counts[len(counts)-1]
	imgLo, _ := r.median(names[lo], "B/image")
	imgHi, _ := r.median(names[hi], "B/image")
	result := strings.Join(parts, "; ")
	if imgLo > 0 {
		perImage := imgHi / imgLo
		result += fmt.Sprintf(". From %s to %s images the memory per image changed ×%s", nodeCount(lo), nodeCount(hi), f2(perImage))
		switch {
		case perImage > 1.25:
			result += ": it grows per image, so more than linear in the images cached"
		case perImage < 0.8:
			result += ": it falls per image (a fixed part spread over more images), so at most linear in the images cached"
		default:
			result += ": constant per image (each image is one cache entry, its parsed reference and an index slot; " +
				"platform sets are interned), so linear in the images cached, up to cache.maxEntries " +
				"(100 000 by default), beyond which eviction holds it constant"
		}
		result += ". The plugin keeps nothing per image beyond the resolver's cache: its own state is per node " +
			"(node index, platform table) and per pod held at PreEnqueue."
	}
	return Row{Section: microSection, Measurement: "resolver cache memory against distinct images cached, by " + kind,
		Result: result, Status: NoCheck}, true
}

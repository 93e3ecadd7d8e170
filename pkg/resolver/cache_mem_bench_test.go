package resolver

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/archfilter/archfilter/pkg/platform"
)

// BenchmarkCacheMemory measures the heap a cached answer costs: the live heap before
// and after storing distinct images' answers the way a resolution does (parsed
// reference, platform set, digest entry and, for a tag, the tag entry), after a GC
// each time. It reports B/image (what one resolved image keeps alive), B/entry (per
// cache entry) and heap-B (the heap all of them keep alive); ns/op is the time to
// store them all. Sub-benchmarks tag and digest store 10 000 images; tag-100000 and
// digest-100000 store 100 000, the default cache.maxEntries, so that the two sizes
// show how the cost grows with the images cached (docs/benchmarks.md's curve).
//
// What an image by tag keeps alive (about 370 B on amd64, Go 1.26): its parsed
// reference (a 64 B imageRef and a refCache map slot), one tag entry (a 128 B
// cacheEntry, its digest string of 80 B, a cacheKey map slot and a digestKey map slot
// in the index that answers pods naming the digest). The platform set is interned and
// shared. By digest the entry is a digest entry, found through the index only, whose
// key and digest are the parsed reference's own string: about 390 B, most of it the
// 112 B repo@sha256:... reference.
func BenchmarkCacheMemory(b *testing.B) {
	const (
		tagFormat    = "registry.example.com/team/app-%d:v1.2.3"
		digestFormat = "registry.example.com/team/app-%d@sha256:%064x"
	)
	for _, bc := range []struct {
		name   string
		format string // image reference; %d is the image's number
		images int
	}{
		{name: "tag", format: tagFormat, images: 10000},
		{name: "digest", format: digestFormat, images: 10000},
		{name: "tag-100000", format: tagFormat, images: DefaultMaxEntries},
		{name: "digest-100000", format: digestFormat, images: DefaultMaxEntries},
	} {
		b.Run(bc.name, func(b *testing.B) {
			images := make([]string, bc.images)
			digests := make([]string, bc.images)
			for i := range images {
				if bc.format == digestFormat {
					images[i] = fmt.Sprintf(bc.format, i, i)
				} else {
					images[i] = fmt.Sprintf(bc.format, i)
				}
				digests[i] = fmt.Sprintf("sha256:%064x", i)
			}
			var perImage, perEntry, total float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				r := newTestResolver(b, Options{})
				before := liveHeap()
				b.StartTimer()
				for j, image := range images {
					ref := r.refs.get(image)
					if ref.err != nil {
						b.Fatal(ref.err)
					}
					// A fresh set per image, as each resolution builds its own.
					set, err := platform.ParseList("linux/amd64,linux/arm64")
					if err != nil {
						b.Fatal(err)
					}
					r.store(ref, anonymousScope, "registry.example.com", digests[j], set)
				}
				b.StopTimer()
				total = float64(liveHeap() - before)
				if n := r.cache.len(); n != bc.images {
					b.Fatalf("the cache holds %d entries after storing %d images", n, bc.images)
				}
				perImage = total / float64(bc.images)
				perEntry = total / float64(r.cache.len())
				runtime.KeepAlive(r)
				b.StartTimer()
			}
			b.ReportMetric(perImage, "B/image")
			b.ReportMetric(perEntry, "B/entry")
			b.ReportMetric(total, "heap-B")
		})
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

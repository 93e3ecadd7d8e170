package resolver

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/archfilter/archfilter/pkg/platform"
)

// BenchmarkCacheMemory measures the heap a cached answer costs: the live heap before
// and after storing cacheMemImages answers the way a resolution does (parsed reference,
// platform set, digest entry and, for a tag, the tag entry), after a GC each time. It
// reports B/image (what one resolved image keeps alive) and B/entry (per cache entry:
// two per tag reference, one per digest reference); ns/op is the time to store them all.
//
// What an image by tag keeps alive (about 370 B on amd64, Go 1.26): its parsed
// reference (a 64 B imageRef and a refCache map slot), one tag entry (a 128 B
// cacheEntry, its digest string of 80 B, a cacheKey map slot and a digestKey map slot
// in the index that answers pods naming the digest). The platform set is interned and
// shared. By digest the entry is a digest entry, found through the index only, whose
// key and digest are the parsed reference's own string: about 390 B, most of it the
// 112 B repo@sha256:... reference.
func BenchmarkCacheMemory(b *testing.B) {
	const cacheMemImages = 10000
	for _, bc := range []struct {
		name   string
		format string // image reference; %d is the image's number
	}{
		{name: "tag", format: "registry.example.com/team/app-%d:v1.2.3"},
		{name: "digest", format: "registry.example.com/team/app-%d@sha256:%064x"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			images := make([]string, cacheMemImages)
			digests := make([]string, cacheMemImages)
			for i := range images {
				if bc.name == "digest" {
					images[i] = fmt.Sprintf(bc.format, i, i)
				} else {
					images[i] = fmt.Sprintf(bc.format, i)
				}
				digests[i] = fmt.Sprintf("sha256:%064x", i)
			}
			var perImage, perEntry float64
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
				grown := float64(liveHeap() - before)
				perImage = grown / cacheMemImages
				perEntry = grown / float64(r.cache.len())
				runtime.KeepAlive(r)
				b.StartTimer()
			}
			b.ReportMetric(perImage, "B/image")
			b.ReportMetric(perEntry, "B/entry")
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

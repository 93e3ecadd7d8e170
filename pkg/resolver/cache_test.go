package resolver

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/archfilter/archfilter/internal/registrytest"
)

func TestCacheEviction(t *testing.T) {
	t0 := time.Unix(1000, 0)
	entry := func(kind entryKind, ref string, ttl time.Duration) *cacheEntry {
		return &cacheEntry{key: cacheKey{kind, anonymousScope, ref}, expires: t0.Add(ttl)}
	}
	for _, tc := range []struct {
		name string
		max  int
		puts []*cacheEntry
		now  time.Time
		want []string // refs left, in any layer
	}{
		{
			name: "oldest goes first when nothing expired",
			max:  3,
			puts: []*cacheEntry{entry(tagEntry, "a", time.Hour), entry(digestEntry, "b", time.Hour), entry(negativeEntry, "c", time.Hour), entry(tagEntry, "d", time.Hour)},
			now:  t0,
			want: []string{"b", "c", "d"},
		},
		{
			name: "an expired entry goes before older live ones",
			max:  3,
			puts: []*cacheEntry{entry(digestEntry, "a", time.Hour), entry(tagEntry, "b", time.Hour), entry(negativeEntry, "c", time.Second), entry(tagEntry, "d", time.Hour)},
			now:  t0.Add(time.Minute),
			want: []string{"a", "b", "d"},
		},
		{
			name: "replacing does not evict",
			max:  2,
			puts: []*cacheEntry{entry(tagEntry, "a", time.Hour), entry(tagEntry, "b", time.Hour), entry(tagEntry, "a", time.Hour)},
			now:  t0,
			want: []string{"a", "b"},
		},
		{
			name: "a replaced entry is young again",
			max:  2,
			puts: []*cacheEntry{entry(tagEntry, "a", time.Hour), entry(tagEntry, "b", time.Hour), entry(tagEntry, "a", time.Hour), entry(tagEntry, "c", time.Hour)},
			now:  t0,
			want: []string{"a", "c"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The size as the entries gauge sees it: the running sum of the changes.
			size, sizes := 0, []int{}
			c := newCache(tc.max, func(delta int) { size += delta; sizes = append(sizes, size) })
			for _, e := range tc.puts {
				c.put(e, tc.now)
			}
			var got []string
			for _, ref := range []string{"a", "b", "c", "d"} {
				for kind := range numKinds {
					if c.get(cacheKey{kind, anonymousScope, ref}) != nil {
						got = append(got, ref)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("entries left (-want,+got):\n%s", diff)
			}
			for _, n := range sizes {
				if n > tc.max {
					t.Errorf("size reached %d, bound %d", n, tc.max)
				}
			}
			if size != len(got) {
				t.Errorf("sum of size changes = %d, entries = %d", size, len(got))
			}
		})
	}
}

// TestMaxEntries resolves more images than the cache holds.
func TestMaxEntries(t *testing.T) {
	m := registrytest.NewMemory(t)
	f := m.Fixtures(t)
	clk := testingclock.NewFakeClock(time.Now())
	const max = 7
	r := newTestResolver(t, Options{Clock: clk, Cache: CacheOptions{MaxEntries: max}})
	var last string
	for i := range 10 {
		last = f.Index(fmt.Sprintf("app%d:v1", i), registrytest.OCI, "linux/amd64").Ref
		if res := r.Resolve(testContext(t), Request{Image: last}); res.Err != nil {
			t.Fatal(res.Err)
		}
		if n := r.cache.len(); n > max {
			t.Fatalf("after %d images the cache holds %d entries, bound %d", i+1, n, max)
		}
		// A failure takes room too.
		r.Resolve(testContext(t), Request{Image: m.Host() + fmt.Sprintf("/missing%d:v1", i)})
		if n := r.cache.len(); n > max {
			t.Fatalf("after %d failures the cache holds %d entries, bound %d", i+1, n, max)
		}
		clk.Step(time.Second)
	}
	if n := r.cache.len(); n != max {
		t.Errorf("cache holds %d entries, want it full at %d", n, max)
	}
	if _, found := r.Lookup(Request{Image: last}); !found {
		t.Error("the newest image was evicted")
	}
}

func TestEntryList(t *testing.T) {
	var l entryList
	e := make([]*cacheEntry, 4)
	for i := range e {
		e[i] = &cacheEntry{seq: uint64(i)}
		l.pushBack(e[i])
	}
	order := func() (fwd, back []uint64) {
		for x := l.front; x != nil; x = x.next {
			fwd = append(fwd, x.seq)
		}
		for x := l.back; x != nil; x = x.prev {
			back = append(back, x.seq)
		}
		return fwd, back
	}
	for _, step := range []struct {
		remove   int
		fwd, rev []uint64
	}{
		{remove: 1, fwd: []uint64{0, 2, 3}, rev: []uint64{3, 2, 0}}, // middle
		{remove: 0, fwd: []uint64{2, 3}, rev: []uint64{3, 2}},       // front
		{remove: 3, fwd: []uint64{2}, rev: []uint64{2}},             // back
		{remove: 2, fwd: nil, rev: nil},                             // last
	} {
		l.remove(e[step.remove])
		fwd, rev := order()
		if !slices.Equal(fwd, step.fwd) || !slices.Equal(rev, step.rev) {
			t.Fatalf("after removing %d: front to back %v, back to front %v; want %v and %v", step.remove, fwd, rev, step.fwd, step.rev)
		}
		if e[step.remove].prev != nil || e[step.remove].next != nil {
			t.Errorf("removed entry %d still points into the list", step.remove)
		}
	}
	l.pushBack(e[3])
	if l.front != e[3] || l.back != e[3] {
		t.Errorf("pushBack on an emptied list: front %p back %p, want %p", l.front, l.back, e[3])
	}
}

package resolver

import (
	"fmt"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/archfilter/archfilter/internal/registrytest"
)

func TestCacheEviction(t *testing.T) {
	t0 := time.Unix(1000, 0)
	entry := func(kind entryKind, ref string, ttl time.Duration) *cacheEntry {
		e := &cacheEntry{key: cacheKey{kind, anonymousScope, ref}, expires: nanos(t0.Add(ttl))}
		if kind == digestEntry {
			e.key.ref = ref + "@sha256:" + ref
			e.digest, e.platforms = e.key.ref[len(ref)+1:], &anySet
		}
		return e
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
				if c.get(cacheKey{tagEntry, anonymousScope, ref}) != nil ||
					c.get(cacheKey{negativeEntry, anonymousScope, ref}) != nil ||
					c.getDigest(anonymousScope, ref, "sha256:"+ref) != nil {
					got = append(got, ref)
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

// TestCacheDigestIndex covers how a digest's platforms are found: through the entry of
// a tag that named it or of the digest itself, in that repository and scope only, and
// for as long as the platforms (not the tag) are fresh.
func TestCacheDigestIndex(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const (
		repo   = "registry.example.com/team/app"
		digest = "sha256:0123"
	)
	tagOf := func(scope, tag string, tagTTL, answerTTL time.Duration) *cacheEntry {
		return &cacheEntry{
			key:     cacheKey{tagEntry, scope, repo + ":" + tag},
			expires: nanos(t0.Add(tagTTL)), answerExpires: nanos(t0.Add(answerTTL)),
			digest: digest, platforms: &anySet,
		}
	}
	digestOf := func(repoName string) *cacheEntry {
		ref := repoName + "@" + digest
		return &cacheEntry{
			key:     cacheKey{digestEntry, anonymousScope, ref},
			expires: nanos(t0.Add(time.Hour)), answerExpires: nanos(t0.Add(time.Hour)),
			digest: ref[len(repoName)+1:], platforms: &anySet,
		}
	}

	t.Run("a tag's entry answers its digest, in its repository and scope", func(t *testing.T) {
		c := newCache(10, func(int) {})
		tag := tagOf(anonymousScope, "v1", time.Minute, time.Hour)
		c.put(tag, t0)
		if got := c.getDigest(anonymousScope, repo, digest); got != tag {
			t.Errorf("digest in the tag's repository: got %v, want the tag's entry", got)
		}
		for name, got := range map[string]*cacheEntry{
			"another repository":                      c.getDigest(anonymousScope, "registry.example.com/team/other", digest),
			"a repository whose name starts the same": c.getDigest(anonymousScope, "registry.example.com/team/ap", digest),
			"another scope":                           c.getDigest("cred-1", repo, digest),
			"another digest":                          c.getDigest(anonymousScope, repo, "sha256:4567"),
		} {
			if got != nil {
				t.Errorf("%s: got an entry, want none", name)
			}
		}
	})

	t.Run("the platforms outlive the tag's expiry for the digest only", func(t *testing.T) {
		tag := tagOf(anonymousScope, "v1", time.Minute, time.Hour)
		later := t0.Add(2 * time.Minute)
		if tag.fresh(later) {
			t.Error("the tag entry is still fresh after TagTTL")
		}
		if !tag.answerFresh(later) {
			t.Error("the platforms expired with the tag, want them served until DigestTTL")
		}
		if got, want := tag.result().Expires, t0.Add(time.Minute); !got.Equal(want) {
			t.Errorf("the tag's answer expires %v, want %v (the earlier expiry)", got, want)
		}
		if got, want := tag.digestResult().Expires, t0.Add(time.Hour); !got.Equal(want) {
			t.Errorf("the digest's answer expires %v, want %v", got, want)
		}
	})

	t.Run("an entry with the platforms replaces the digest entry, which could no longer be found", func(t *testing.T) {
		size := 0
		c := newCache(10, func(delta int) { size += delta })
		c.put(digestOf(repo), t0)
		c.put(digestOf("registry.example.com/team/mirror"), t0) // same digest, another repository
		if c.len() != 1 || size != 1 {
			t.Errorf("after two digest entries of one digest: %d entries (gauge %d), want 1", c.len(), size)
		}
		tag := tagOf(anonymousScope, "v1", time.Minute, time.Hour)
		c.put(tag, t0)
		if c.len() != 1 || size != 1 {
			t.Errorf("after the tag: %d entries (gauge %d), want 1: the tag's", c.len(), size)
		}
		if got := c.getDigest(anonymousScope, repo, digest); got != tag {
			t.Errorf("the digest is answered by %v, want the tag's entry", got)
		}
		// A second tag of the digest keeps the first: it is still found by its tag.
		tag2 := tagOf(anonymousScope, "latest", time.Minute, time.Hour)
		c.put(tag2, t0)
		if c.len() != 2 || c.get(tag.key) != tag || c.getDigest(anonymousScope, repo, digest) != tag2 {
			t.Errorf("after a second tag: %d entries, first tag found %v, digest answered by the newest: %v",
				c.len(), c.get(tag.key) == tag, c.getDigest(anonymousScope, repo, digest) == tag2)
		}
	})

	t.Run("an evicted entry leaves the index", func(t *testing.T) {
		c := newCache(1, func(int) {})
		c.put(tagOf(anonymousScope, "v1", time.Minute, time.Hour), t0)
		c.put(&cacheEntry{key: cacheKey{negativeEntry, anonymousScope, "x"}, expires: nanos(t0.Add(time.Hour))}, t0)
		if got := c.getDigest(anonymousScope, repo, digest); got != nil {
			t.Error("the evicted tag's digest is still answered")
		}
		if len(c.byDigest) != 0 || len(c.entries) != 1 {
			t.Errorf("maps hold %d digests and %d keys, want 0 and 1", len(c.byDigest), len(c.entries))
		}
	})
}

// The cache's memory goal (BenchmarkCacheMemory) depends on an entry staying in the
// 128 B size class on 64-bit platforms (32-bit ones make it smaller).
func TestCacheEntrySize(t *testing.T) {
	if got := unsafe.Sizeof(cacheEntry{}); got > 128 {
		t.Errorf("cacheEntry is %d B, want at most 128", got)
	}
}

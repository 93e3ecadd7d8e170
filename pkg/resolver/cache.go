package resolver

import (
	"sync"
	"time"

	"github.com/archfilter/archfilter/pkg/platform"
)

// entryKind is the layer an entry belongs to. Each layer has one TTL.
type entryKind uint8

const (
	// tagEntry: tag -> digest and that digest's platforms. The digest is asked again
	// with HEAD after TagTTL; the platforms are read again after DigestTTL.
	tagEntry entryKind = iota
	// digestEntry: repository@digest -> platforms, for DigestTTL, for images named
	// by digest.
	digestEntry
	// negativeEntry: reference -> failure, for NegativeTTL.
	negativeEntry
	numKinds
)

// cacheKey is a struct rather than a joined string so that Lookup builds keys without
// allocating. scope is the credential scope that produced the entry: "anonymous", a
// Credential.ID, or for failures the whole candidate list (see Resolver.failureScope).
type cacheKey struct {
	kind  entryKind
	scope string
	ref   string
}

// digestKey finds the entry that holds a digest's platforms in a scope, whether its
// image was named by that digest or by a tag that named it. Digest entries are
// found only through it; tag entries through their cacheKey and through it.
type digestKey struct {
	scope, digest string
}

// cacheEntry is immutable once stored: readers use it after releasing the lock.
// Only prev and next change, under the cache's lock, and readers never use them.
//
// It is laid out for size, 128 B on 64-bit platforms (see BenchmarkCacheMemory):
// expiries are Unix nanoseconds, the platform set is a pointer to an interned set
// and the error is the resolver's own type.
type cacheEntry struct {
	key cacheKey
	seq uint64 // insertion order across layers

	// expires ends the entry: a tag's digest is then asked again with HEAD, a
	// failure is retried.
	expires int64
	// answerExpires ends the platforms: DigestTTL after they were read. A tag
	// entry's can outlast its expires, for pods that name the digest.
	answerExpires int64

	// The layer's insertion-order list, threaded through the entries so that
	// an entry costs one allocation (container/list would add an Element).
	prev, next *cacheEntry

	// digest is the manifest digest the platforms were read from ("" for failures);
	// a digest entry's is a slice of its key.
	digest string
	// endpoint is the endpoint host that answered, asked again on revalidation.
	endpoint string

	// The answer: platforms, or err for negative entries.
	platforms *platform.Set
	err       *Error
}

// nanos is t as entries store it.
func nanos(t time.Time) int64 { return t.UnixNano() }

// fresh reports whether the entry's own expiry is after now.
func (e *cacheEntry) fresh(now time.Time) bool { return nanos(now) < e.expires }

// answerFresh reports whether the entry's platforms are still served at now, to a pod
// naming its digest.
func (e *cacheEntry) answerFresh(now time.Time) bool { return nanos(now) < e.answerExpires }

// result is the entry's answer as Lookup serves it: until both expiries for a tag
// (it is asked again at the first), until answerExpires for a digest.
func (e *cacheEntry) result() Result {
	if e.err != nil {
		return Result{Err: e.err, Expires: time.Unix(0, e.expires)}
	}
	exp := e.answerExpires
	if e.key.kind == tagEntry {
		exp = min(exp, e.expires)
	}
	return Result{Platforms: *e.platforms, Digest: e.digest, Expires: time.Unix(0, exp)}
}

// digestResult is the entry's answer to a pod naming its digest.
func (e *cacheEntry) digestResult() Result {
	return Result{Platforms: *e.platforms, Digest: e.digest, Expires: time.Unix(0, e.answerExpires)}
}

// holdsAnswer reports whether the entry has platforms to index by digest.
func (e *cacheEntry) holdsAnswer() bool { return e.platforms != nil && e.key.kind != negativeEntry }

// inRepository reports whether the entry's reference, registry/repository:tag or
// registry/repository@digest, is in repoName. A repository path has no ':' or '@'
// (a port is in the registry, before the first '/'), so the character after repoName
// tells a repository from a longer one that starts with its name.
func (e *cacheEntry) inRepository(repoName string) bool {
	ref := e.key.ref
	return len(ref) > len(repoName) && ref[:len(repoName)] == repoName &&
		(ref[len(repoName)] == ':' || ref[len(repoName)] == '@')
}

// cache is a bounded store of answers.
//
// Expired entries are kept until space is needed: a stale tag entry is what lets the
// resolver revalidate with one HEAD instead of GETting again, and a stale digest's
// platforms save refetching an unchanged image. Lookup never serves them (beyond
// Cache.StaleWhileRevalidate).
//
// A tag entry holds its digest's platforms itself, and an index by (scope, digest)
// finds them for pods that name the digest. Before, a tag had a second entry for its
// digest: one entry per image by tag halves what the cache costs (BenchmarkCacheMemory).
// The index keeps one entry per digest and scope, the newest; when it goes, a pod
// naming that digest costs one registry fetch even if another tag's entry still holds
// the platforms.
//
// Eviction, when MaxEntries is reached: an expired entry if there is one, else the oldest
// by insertion (FIFO). Each layer keeps its entries in insertion order and has a single
// TTL, so insertion order is expiry order and both checks only look at list fronts: O(1).
// Replacing an entry (a revalidated tag) moves it to the back. The one exception, a stale
// answer kept for NegativeTTL while its registry fails, can leave an expired entry behind
// the front; it then goes by age instead, which only makes eviction slightly less choosy.
//
// go-cache was the obvious candidate and was not used: its expiry reads time.Now, which
// a fake clock cannot drive, it deletes entries on expiry (losing what revalidation needs),
// it has no bound, and its string keys would cost Lookup an allocation per probe.
type cache struct {
	max int
	// onChange reports each change of the number of entries (+1, -1), so that
	// a gauge summed over several caches (one per profile) stays right.
	onChange func(delta int)

	mu sync.RWMutex
	// entries holds the tag and negative entries; digest entries are only in byDigest.
	entries  map[cacheKey]*cacheEntry
	byDigest map[digestKey]*cacheEntry
	order    [numKinds]entryList
	n        int // entries in the lists
	seq      uint64
}

// entryList is a layer's entries, oldest first.
type entryList struct {
	front, back *cacheEntry
}

func (l *entryList) pushBack(e *cacheEntry) {
	e.prev, e.next = l.back, nil
	if l.back != nil {
		l.back.next = e
	} else {
		l.front = e
	}
	l.back = e
}

func (l *entryList) remove(e *cacheEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.front = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.back = e.prev
	}
	e.prev, e.next = nil, nil
}

func newCache(max int, onChange func(delta int)) *cache {
	return &cache{
		max:      max,
		onChange: onChange,
		entries:  make(map[cacheKey]*cacheEntry, min(max, 4096)),
		byDigest: make(map[digestKey]*cacheEntry, min(max, 4096)),
	}
}

// get returns the tag or negative entry for k, expired or not, or nil.
func (c *cache) get(k cacheKey) *cacheEntry {
	c.mu.RLock()
	e := c.entries[k]
	c.mu.RUnlock()
	return e
}

// getDigest returns the entry holding the platforms of digest in repoName (a digest
// or a tag entry), expired or not, or nil.
func (c *cache) getDigest(scope, repoName, digest string) *cacheEntry {
	c.mu.RLock()
	e := c.byDigest[digestKey{scope, digest}]
	c.mu.RUnlock()
	if e == nil || !e.inRepository(repoName) {
		return nil
	}
	return e
}

// put stores e, replacing the entry with its key. An entry with platforms also
// replaces the digest entry of its digest in its scope (whatever its repository: the
// index holds one), which could no longer be found. It evicts one entry if the cache
// is still full.
func (c *cache) put(e *cacheEntry, now time.Time) {
	c.mu.Lock()
	before := c.n
	if e.key.kind != digestEntry {
		if old := c.entries[e.key]; old != nil {
			c.removeLocked(old)
		}
	}
	if e.holdsAnswer() {
		if old := c.byDigest[digestKey{e.key.scope, e.digest}]; old != nil && old.key.kind == digestEntry {
			c.removeLocked(old)
		}
	}
	if c.n >= c.max {
		c.evictLocked(now)
	}
	c.seq++
	e.seq = c.seq
	c.order[e.key.kind].pushBack(e)
	c.n++
	if e.key.kind != digestEntry {
		c.entries[e.key] = e
	}
	if e.holdsAnswer() {
		c.byDigest[digestKey{e.key.scope, e.digest}] = e
	}
	delta := c.n - before
	c.mu.Unlock()
	if delta != 0 {
		c.onChange(delta)
	}
}

func (c *cache) evictLocked(now time.Time) {
	var oldest *cacheEntry
	for k := range c.order {
		e := c.order[k].front
		if e == nil {
			continue
		}
		if !e.fresh(now) {
			c.removeLocked(e)
			return
		}
		if oldest == nil || e.seq < oldest.seq {
			oldest = e
		}
	}
	if oldest != nil {
		c.removeLocked(oldest)
	}
}

func (c *cache) removeLocked(e *cacheEntry) {
	c.order[e.key.kind].remove(e)
	c.n--
	if e.key.kind != digestEntry {
		delete(c.entries, e.key)
	}
	if e.holdsAnswer() {
		dk := digestKey{e.key.scope, e.digest}
		if c.byDigest[dk] == e {
			delete(c.byDigest, dk)
		}
	}
}

func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.n
}

package resolver

import (
	"strings"
	"sync"
	"time"

	"github.com/archfilter/archfilter/pkg/platform"
)

// entryKind is the layer an entry belongs to. Each layer has one TTL.
type entryKind uint8

const (
	// tagEntry: tag -> digest, revalidated with HEAD after TagTTL.
	tagEntry entryKind = iota
	// digestEntry: repository@digest -> Result, for DigestTTL.
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

// cacheEntry is immutable once stored: readers use it after releasing the lock.
// Only prev and next change, under the cache's lock, and readers never use them.
type cacheEntry struct {
	key     cacheKey
	seq     uint64 // insertion order across layers
	expires time.Time

	// The layer's insertion-order list, threaded through the entries so that
	// an entry costs one allocation (container/list would add an Element).
	prev, next *cacheEntry

	// digestRef is repoName@digest: a tag entry's pointer to its digest entry.
	digestRef string
	// endpoint is the endpoint host that answered, asked again on revalidation.
	endpoint string

	// The answer of digest entries (platforms) and negative entries (err).
	// Result is not stored whole: its digest is a slice of key.ref or
	// digestRef, and its expiry is expires (see BenchmarkCacheMemory).
	platforms platform.Set
	err       error
}

// digest is the manifest digest the entry names: the one its tag named, or
// its digest entry's own; "" for negative entries.
func (e *cacheEntry) digest() string {
	ref := e.digestRef
	if e.key.kind == digestEntry {
		ref = e.key.ref
	}
	if i := strings.LastIndexByte(ref, '@'); i >= 0 {
		return ref[i+1:]
	}
	return ""
}

// result is the entry's answer as Lookup serves it.
func (e *cacheEntry) result() Result {
	return Result{Platforms: e.platforms, Digest: e.digest(), Err: e.err, Expires: e.expires}
}

// cache is a bounded map of answers.
//
// Expired entries are kept until space is needed: a stale tag entry is what lets the
// resolver revalidate with one HEAD instead of GETting again, and a stale digest entry
// saves refetching an unchanged image. Lookup never serves them.
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

	mu      sync.RWMutex
	entries map[cacheKey]*cacheEntry
	order   [numKinds]entryList
	seq     uint64
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
	}
}

// get returns the entry for k, expired or not, or nil.
func (c *cache) get(k cacheKey) *cacheEntry {
	c.mu.RLock()
	e := c.entries[k]
	c.mu.RUnlock()
	return e
}

// getTag returns the entry of tag key k and the digest entry it points at, either possibly
// nil, under one read lock: this pair is the scheduler's hot path.
func (c *cache) getTag(k cacheKey) (tag, digest *cacheEntry) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	tag = c.entries[k]
	if tag == nil {
		return nil, nil
	}
	return tag, c.entries[cacheKey{digestEntry, k.scope, tag.digestRef}]
}

// put stores e, replacing any entry with its key, evicting one entry if the cache is full.
func (c *cache) put(e *cacheEntry, now time.Time) {
	c.mu.Lock()
	before := len(c.entries)
	if old, ok := c.entries[e.key]; ok {
		c.order[e.key.kind].remove(old)
	} else if len(c.entries) >= c.max {
		c.evictLocked(now)
	}
	c.seq++
	e.seq = c.seq
	c.order[e.key.kind].pushBack(e)
	c.entries[e.key] = e
	delta := len(c.entries) - before
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
		if !now.Before(e.expires) {
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
	delete(c.entries, e.key)
}

func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

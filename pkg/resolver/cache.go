package resolver

import (
	"container/list"
	"sync"
	"time"
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
type cacheEntry struct {
	key     cacheKey
	seq     uint64 // insertion order across layers
	expires time.Time

	// Tag entries.
	digestRef string // repoName@digest, the ref of the digest entry
	endpoint  string // the endpoint host that answered, asked again on revalidation

	// Digest and negative entries; a tag entry's result holds only the
	// digest the tag named.
	result Result
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
	entries map[cacheKey]*list.Element // values are *cacheEntry
	order   [numKinds]list.List
	seq     uint64
}

func newCache(max int, onChange func(delta int)) *cache {
	return &cache{
		max:      max,
		onChange: onChange,
		entries:  make(map[cacheKey]*list.Element, min(max, 4096)),
	}
}

// get returns the entry for k, expired or not, or nil.
func (c *cache) get(k cacheKey) *cacheEntry {
	c.mu.RLock()
	el := c.entries[k]
	var e *cacheEntry
	if el != nil {
		e = el.Value.(*cacheEntry)
	}
	c.mu.RUnlock()
	return e
}

// getTag returns the entry of tag key k and the digest entry it points at, either possibly
// nil, under one read lock: this pair is the scheduler's hot path.
func (c *cache) getTag(k cacheKey) (tag, digest *cacheEntry) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	el := c.entries[k]
	if el == nil {
		return nil, nil
	}
	tag = el.Value.(*cacheEntry)
	if el = c.entries[cacheKey{digestEntry, k.scope, tag.digestRef}]; el != nil {
		digest = el.Value.(*cacheEntry)
	}
	return tag, digest
}

// put stores e, replacing any entry with its key, evicting one entry if the cache is full.
func (c *cache) put(e *cacheEntry, now time.Time) {
	c.mu.Lock()
	before := len(c.entries)
	if old, ok := c.entries[e.key]; ok {
		c.order[e.key.kind].Remove(old)
	} else if len(c.entries) >= c.max {
		c.evictLocked(now)
	}
	c.seq++
	e.seq = c.seq
	c.entries[e.key] = c.order[e.key.kind].PushBack(e)
	delta := len(c.entries) - before
	c.mu.Unlock()
	if delta != 0 {
		c.onChange(delta)
	}
}

func (c *cache) evictLocked(now time.Time) {
	var oldest *list.Element
	for k := range c.order {
		front := c.order[k].Front()
		if front == nil {
			continue
		}
		e := front.Value.(*cacheEntry)
		if !now.Before(e.expires) {
			c.removeLocked(front)
			return
		}
		if oldest == nil || e.seq < oldest.Value.(*cacheEntry).seq {
			oldest = front
		}
	}
	if oldest != nil {
		c.removeLocked(oldest)
	}
}

func (c *cache) removeLocked(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.order[e.key.kind].Remove(el)
	delete(c.entries, e.key)
}

func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

package resolver

import (
	"strings"
	"sync"

	"github.com/archfilter/archfilter/pkg/platform"
)

// maxInternedSets bounds setInterner: clusters see a handful of distinct
// platform sets ("linux/amd64,linux/arm64" is most of them), so a set past the
// bound is a sign of unusual images and is simply stored on its own.
const maxInternedSets = 4096

// setInterner makes equal platform sets share one Set, so that the cache holds each
// distinct set once rather than once per image, and an entry points at it. Sets are
// immutable (every operation returns a new one), which makes sharing safe.
type setInterner struct {
	mu sync.Mutex
	m  map[string]*platform.Set
}

func newSetInterner() *setInterner {
	return &setInterner{m: map[string]*platform.Set{}}
}

// The sets with nothing to share.
var (
	anySet   = platform.Any()
	emptySet = platform.NewSet()
)

// intern returns the set equal to s that was interned first, or a copy of s.
func (i *setInterner) intern(s platform.Set) *platform.Set {
	switch {
	case s.IsAny():
		return &anySet
	case s.IsEmpty():
		return &emptySet
	}
	key := setKey(s)
	i.mu.Lock()
	defer i.mu.Unlock()
	if shared, ok := i.m[key]; ok {
		return shared
	}
	p := &s
	if len(i.m) < maxInternedSets {
		i.m[key] = p
	}
	return p
}

// setKey names every field of every platform: Set.String leaves out
// os.version and features, which sets that differ only there must keep.
func setKey(s platform.Set) string {
	var b strings.Builder
	for _, p := range s.Platforms() {
		for _, f := range []string{p.OS, p.Architecture, p.Variant, p.OSVersion} {
			b.WriteString(f)
			b.WriteByte(0)
		}
		b.WriteString(strings.Join(p.OSFeatures, "\x01"))
		b.WriteByte('\n')
	}
	return b.String()
}

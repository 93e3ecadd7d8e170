package archfilter

import (
	"maps"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/pkg/platform"
)

// maxTablePlatforms bounds the distinct node platforms (os, arch, Windows build) the
// table numbers; nodes of further platforms are read from their labels.
const maxTablePlatforms = 1 << 12

// platformTable answers Filter's "which platform is this node?" from a small table
// keyed by the node object, fed by node informer events, instead of from the node's
// labels. Filter runs for hundreds of nodes per cycle; each node's label map is a
// separate allocation, rarely in the CPU cache by the time Filter reads it, and on
// 5 000 nodes those reads made Filter cost as much as all default Filter plugins
// together (docs/benchmarks.md). The table is a few dozen kilobytes and stays cached.
//
// Keys are the informer's objects, which are never modified: a node found in the
// table has exactly the platform its labels say, however the table lags the
// scheduler's snapshot. A node that is not found (not delivered yet, or the
// scheduler holds an object the table has replaced) is read from its labels.
type platformTable struct {
	mu sync.Mutex
	// ids is the table being written, under mu; published is a copy that is never
	// modified, for readers.
	ids map[*v1.Node]uint16
	// objects holds each node's current object, to drop the previous one.
	objects map[string]*v1.Node
	// numbers names the platforms; platforms is append-only, so a snapshot's
	// prefix of it never changes.
	numbers   map[platform.NodePlatform]uint16
	platforms []platform.NodePlatform
	// overflowed is set, for good, once a node of a platform beyond
	// maxTablePlatforms was left out of the table.
	overflowed bool
	dirty      atomic.Bool
	published  atomic.Pointer[platformSnapshot]
}

// platformSnapshot is the table at one moment: an id per node object, and the
// platform of each id.
type platformSnapshot struct {
	ids       map[*v1.Node]uint16
	platforms []platform.NodePlatform
	// overflowed: some nodes' platforms are not in platforms (maxTablePlatforms).
	overflowed bool
}

func newPlatformTable() *platformTable {
	t := &platformTable{
		ids:     map[*v1.Node]uint16{},
		objects: map[string]*v1.Node{},
		numbers: map[platform.NodePlatform]uint16{},
	}
	t.published.Store(&platformSnapshot{})
	return t
}

func (t *platformTable) set(node *v1.Node) {
	np, _ := platform.FromNode(node)
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.objects[node.Name]; old != nil {
		delete(t.ids, old)
		delete(t.objects, node.Name)
	}
	id, ok := t.numbers[np]
	if !ok {
		if len(t.platforms) >= maxTablePlatforms {
			t.overflowed = true
			t.dirty.Store(true)
			return
		}
		id = uint16(len(t.platforms))
		t.numbers[np] = id
		t.platforms = append(t.platforms, np)
	}
	t.ids[node] = id
	t.objects[node.Name] = node
	t.dirty.Store(true)
}

func (t *platformTable) remove(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.objects[name]; old != nil {
		delete(t.ids, old)
		delete(t.objects, name)
		t.dirty.Store(true)
	}
}

// snapshot returns the table as of now. It copies the table when nodes changed
// since the last call, so at most once per scheduling cycle: a burst of node
// events costs one copy, not one per event.
func (t *platformTable) snapshot() *platformSnapshot {
	if t.dirty.Load() {
		t.mu.Lock()
		if t.dirty.Load() {
			t.published.Store(&platformSnapshot{ids: maps.Clone(t.ids), platforms: t.platforms[:len(t.platforms):len(t.platforms)], overflowed: t.overflowed})
			t.dirty.Store(false)
		}
		t.mu.Unlock()
	}
	return t.published.Load()
}

// byPlatform answers one question per node platform, such as "may the pod run
// there?" or "what does the node score?": with the answer for the snapshot's number
// of the node when it has one, by asking of the node's labels otherwise. It is
// built once per cycle; of does not allocate.
type byPlatform[T any] struct {
	snapshot *platformSnapshot
	// answers is indexed by platform number.
	answers []T
	ask     func(np platform.NodePlatform, known bool) T
}

// newByPlatform asks every platform of snap. known is false for a node that
// reports no os or architecture (platform.FromNode's ok).
func newByPlatform[T any](snap *platformSnapshot, ask func(np platform.NodePlatform, known bool) T) byPlatform[T] {
	answers := make([]T, len(snap.platforms))
	for id, np := range snap.platforms {
		answers[id] = ask(np, np.OS != "" && np.Architecture != "")
	}
	return byPlatform[T]{snapshot: snap, answers: answers, ask: ask}
}

// allAllow says whether allowed is true of every platform snap knows, that is of
// every node the table held when snap was taken; false for an empty table or one
// that overflowed, which do not know every node's platform. It does not allocate.
func allAllow(snap *platformSnapshot, allowed func(np platform.NodePlatform, known bool) bool) bool {
	if len(snap.platforms) == 0 || snap.overflowed {
		return false
	}
	for _, np := range snap.platforms {
		if !allowed(np, np.OS != "" && np.Architecture != "") {
			return false
		}
	}
	return true
}

// uniform says whether every platform of the snapshot has the same answer, so
// that the answers tell no node the table holds from another; false for an empty
// table or one that overflowed.
func uniform[T comparable](b *byPlatform[T]) bool {
	if len(b.answers) == 0 || b.snapshot.overflowed {
		return false
	}
	for _, a := range b.answers[1:] {
		if a != b.answers[0] {
			return false
		}
	}
	return true
}

func (b *byPlatform[T]) of(node *v1.Node) T {
	if id, ok := b.snapshot.ids[node]; ok {
		return b.answers[id]
	}
	np, ok := platform.FromNode(node)
	return b.ask(np, ok)
}

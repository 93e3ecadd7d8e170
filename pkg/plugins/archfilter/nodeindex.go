package archfilter

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archfilter/archfilter/pkg/platform"
)

// nodeIndex keeps node names by os/arch, fed by node informer events, so
// PreFilter can hand the scheduler the few nodes a minority-platform pod can
// use without scanning the cluster.
type nodeIndex struct {
	mu sync.RWMutex
	// platformOf is each node's last seen platform.
	platformOf map[string]platform.NodePlatform
	// byArch holds node names per os/arch; sets are rebuilt, never mutated,
	// once handed out, so PreFilter can return them without copying.
	byArch map[osArch]sets.Set[string]
}

type osArch struct{ os, arch string }

func newNodeIndex() *nodeIndex {
	return &nodeIndex{platformOf: map[string]platform.NodePlatform{}, byArch: map[osArch]sets.Set[string]{}}
}

// platform returns the last seen platform of a node.
func (x *nodeIndex) platform(name string) (platform.NodePlatform, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	np, ok := x.platformOf[name]
	return np, ok && np.OS != "" && np.Architecture != ""
}

func (x *nodeIndex) set(node *v1.Node) {
	np, _ := platform.FromNode(node)
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.platformOf[node.Name]; ok {
		if old == np {
			return
		}
		x.removeLocked(node.Name, old)
	}
	x.platformOf[node.Name] = np
	key := osArch{np.OS, np.Architecture}
	// Copy on write: a set handed to a scheduling cycle must not change under it.
	next := x.byArch[key].Clone()
	if next == nil {
		next = sets.New[string]()
	}
	next.Insert(node.Name)
	x.byArch[key] = next
}

func (x *nodeIndex) remove(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.platformOf[name]; ok {
		x.removeLocked(name, old)
		delete(x.platformOf, name)
	}
}

func (x *nodeIndex) removeLocked(name string, np platform.NodePlatform) {
	key := osArch{np.OS, np.Architecture}
	next := x.byArch[key].Clone()
	next.Delete(name)
	if next.Len() == 0 {
		delete(x.byArch, key)
		return
	}
	x.byArch[key] = next
}

// narrow returns the names of the indexed nodes whose os/arch set allows, or
// nil when narrowing is not worth it (more than half the nodes match) or not
// safe (the index does not hold as many nodes as the cycle's snapshot, so it
// lags the scheduler's view). Nodes that report no platform match every set,
// as in Filter. Windows builds are left to Filter: the result may hold nodes
// Filter rejects. Returned sets are never modified afterwards.
func (x *nodeIndex) narrow(set platform.Set, snapshotNodes int) sets.Set[string] {
	x.mu.RLock()
	defer x.mu.RUnlock()
	parts, size := x.partsLocked(set)
	total := len(x.platformOf)
	if total != snapshotNodes || size == 0 || size*2 > total {
		return nil
	}
	return union(parts, size)
}

// partsLocked returns the per-os/arch name sets set allows and their total size.
func (x *nodeIndex) partsLocked(set platform.Set) ([]sets.Set[string], int) {
	var parts []sets.Set[string]
	size := 0
	for key, names := range x.byArch {
		if key.os == "" || key.arch == "" || set.MatchesNode(platform.NodePlatform{OS: key.os, Architecture: key.arch}) {
			parts = append(parts, names)
			size += names.Len()
		}
	}
	return parts, size
}

// union shares a single part (they are immutable) and copies several.
func union(parts []sets.Set[string], size int) sets.Set[string] {
	if len(parts) == 1 {
		return parts[0]
	}
	out := make(sets.Set[string], size)
	for _, p := range parts {
		for name := range p {
			out.Insert(name)
		}
	}
	return out
}

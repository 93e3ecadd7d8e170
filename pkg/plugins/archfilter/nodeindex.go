package archfilter

import (
	"sync"
	"sync/atomic"

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
	// byArch holds node names per os/arch.
	byArch map[osArch]*archNodes
}

// archNodes are the names of an os/arch's nodes. The set is changed in place until
// narrow hands it to a scheduling cycle; from then on it is never changed, and the
// next change copies it. So a node event costs a copy of its os/arch's names only
// after a cycle took them (at most once per cycle that narrowed), and filling the
// index with n nodes, as the informer's initial list does, costs O(n), not O(n²).
type archNodes struct {
	names sets.Set[string]
	// handedOut is set, under the index's read lock, when narrow returns names.
	handedOut atomic.Bool
}

type osArch struct{ os, arch string }

func newNodeIndex() *nodeIndex {
	return &nodeIndex{platformOf: map[string]platform.NodePlatform{}, byArch: map[osArch]*archNodes{}}
}

// writableLocked returns key's names for a change: in place unless a cycle holds
// them, else a copy that replaces them. The write lock must be held.
func (x *nodeIndex) writableLocked(key osArch) sets.Set[string] {
	cur := x.byArch[key]
	switch {
	case cur == nil:
		cur = &archNodes{names: sets.New[string]()}
		x.byArch[key] = cur
	case cur.handedOut.Load():
		cur = &archNodes{names: cur.names.Clone()}
		x.byArch[key] = cur
	}
	return cur.names
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
	// A set handed to a scheduling cycle must not change under it (writableLocked).
	x.writableLocked(osArch{np.OS, np.Architecture}).Insert(node.Name)
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
	names := x.writableLocked(key)
	names.Delete(name)
	if names.Len() == 0 {
		delete(x.byArch, key)
	}
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

// partsLocked returns the per-os/arch nodes set allows and their total size.
func (x *nodeIndex) partsLocked(set platform.Set) ([]*archNodes, int) {
	var parts []*archNodes
	size := 0
	for key, nodes := range x.byArch {
		if key.os == "" || key.arch == "" || set.MatchesNode(platform.NodePlatform{OS: key.os, Architecture: key.arch}) {
			parts = append(parts, nodes)
			size += nodes.names.Len()
		}
	}
	return parts, size
}

// union hands out a single part's names, which are never changed from then on
// (archNodes), and copies several into a set of their own.
func union(parts []*archNodes, size int) sets.Set[string] {
	if len(parts) == 1 {
		parts[0].handedOut.Store(true)
		return parts[0].names
	}
	out := make(sets.Set[string], size)
	for _, p := range parts {
		for name := range p.names {
			out.Insert(name)
		}
	}
	return out
}

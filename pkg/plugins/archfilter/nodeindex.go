package archfilter

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

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

func (x *nodeIndex) watch(informer cache.SharedIndexInformer) error {
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { x.upsert(obj) },
		UpdateFunc: func(_, obj any) { x.upsert(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if node, ok := obj.(*v1.Node); ok {
				x.remove(node.Name)
			}
		},
	})
	return err
}

func (x *nodeIndex) upsert(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
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

// matching returns the names of nodes whose os/arch set allows, and the number
// of indexed nodes. Nodes that report no platform match every set, as in
// Filter. Windows builds are left to Filter: the result may hold nodes Filter
// rejects, never miss one it accepts (apart from nodes not yet indexed).
func (x *nodeIndex) matching(set platform.Set) (sets.Set[string], int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	total := len(x.platformOf)
	var parts []sets.Set[string]
	for key, names := range x.byArch {
		if key.os == "" || key.arch == "" || set.MatchesNode(platform.NodePlatform{OS: key.os, Architecture: key.arch}) {
			parts = append(parts, names)
		}
	}
	if len(parts) == 1 {
		return parts[0], total
	}
	out := sets.New[string]()
	for _, p := range parts {
		out = out.Union(p)
	}
	return out, total
}

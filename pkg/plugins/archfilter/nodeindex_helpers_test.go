package archfilter

import (
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archfilter/archfilter/pkg/platform"
)

// matching returns every indexed node set allows and the number of indexed
// nodes, without narrow's worth-it rules, so tests can check the index itself.
func (x *nodeIndex) matching(set platform.Set) (sets.Set[string], int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	parts, size := x.partsLocked(set)
	if len(parts) == 0 {
		return sets.New[string](), len(x.platformOf)
	}
	return union(parts, size), len(x.platformOf)
}

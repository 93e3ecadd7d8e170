// Package bounded keeps maps that hold cheap-to-rebuild entries (sessions,
// cached plugin answers) under a size limit.
package bounded

// Trim makes room in m for one more entry when it holds limit or more: it
// drops expired entries first, then arbitrary ones, because losing an entry
// only costs recomputing it.
func Trim[K comparable, V any](m map[K]V, limit int, expired func(V) bool) {
	if len(m) < limit {
		return
	}
	for k, v := range m {
		if expired(v) {
			delete(m, k)
		}
	}
	for k := range m {
		if len(m) < limit {
			return
		}
		delete(m, k)
	}
}

package archfilter

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

type recordingListener struct{ added, removed []string }

func (r *recordingListener) set(node *v1.Node)  { r.added = append(r.added, node.Name) }
func (r *recordingListener) remove(name string) { r.removed = append(r.removed, name) }

// TestSetNodeIgnoresOtherObjects: an informer event with an object that is not a
// node reaches no listener.
func TestSetNodeIgnoresOtherObjects(t *testing.T) {
	a, b := &recordingListener{}, &recordingListener{}
	setNode("not a node", []nodeListener{a, b})
	setNode(linuxNode("n1", "amd64"), []nodeListener{a, b})
	for _, l := range []*recordingListener{a, b} {
		if len(l.added) != 1 || l.added[0] != "n1" {
			t.Errorf("listener saw %v, want [n1]", l.added)
		}
	}
}

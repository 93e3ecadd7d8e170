//go:build !k8s1.35

package main

import (
	"testing"

	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"

	"github.com/archfilter/archfilter/internal/schedulercmd"
)

// TestFlavourListsMatchTheRegistries pins the lists behind the "use the other
// flavour" errors on the main line: the in-tree plugins newer than 1.35 are in this
// kube-scheduler's registry, and no scheduler-plugins name collides with it.
func TestFlavourListsMatchTheRegistries(t *testing.T) {
	inTree := plugins.NewInTreeRegistry()
	for _, name := range schedulercmd.InTreeSince136.Names {
		if _, ok := inTree[name]; !ok {
			t.Errorf("%s is not an in-tree plugin of this kube-scheduler", name)
		}
	}
	for _, name := range schedulercmd.SchedulerPlugins.Names {
		if _, ok := inTree[name]; ok {
			t.Errorf("scheduler-plugins' %s is also an in-tree plugin", name)
		}
	}
}

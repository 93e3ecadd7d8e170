package main

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/archfilter/archfilter/internal/schedulercmd"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// TestRegistersEverySchedulerPluginsPlugin pins what this flavour registers to
// the list the main line uses to name this flavour, so the two cannot drift.
func TestRegistersEverySchedulerPluginsPlugin(t *testing.T) {
	registry := frameworkruntime.Registry{}
	for _, opt := range Options() {
		if err := opt(registry); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]string, 0, len(registry))
	for name := range registry {
		got = append(got, name)
	}
	want := append([]string{archfilter.Name, archfilter.TaintTolerationName}, schedulercmd.SchedulerPlugins.Names...)
	want = append(want, schedulercmd.InTreeSince135.Names...)
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registered plugins (-want,+got):\n%s", diff)
	}
}

// TestNewerInTreePluginsAreNotInTree checks that the names this flavour sends
// to the main line really are missing from its own kube-scheduler (the main
// line's test checks that they are in 1.36's).
func TestNewerInTreePluginsAreNotInTree(t *testing.T) {
	inTree := plugins.NewInTreeRegistry()
	for _, name := range schedulercmd.InTreeSince135.Names {
		if _, ok := inTree[name]; ok {
			t.Errorf("%s is in this kube-scheduler's in-tree registry: drop it from InTreeSince135", name)
		}
	}
}

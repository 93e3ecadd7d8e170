package main

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	want := append([]string{archfilter.Name, archfilter.TaintTolerationName}, schedulercmd.SchedulerPluginsNames...)
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registered plugins (-want,+got):\n%s", diff)
	}
}

//go:build !k8s1.35

package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// TestSetupWithManifestsAndNewerPlugins: with the gates that add 1.37's
// newer in-tree plugins (GangScheduling through GenericWorkload,
// DeferredPodScheduling through InPlacePodVerticalScalingSchedulerPreemption),
// the shipped configurations still run every default plugin in 1.37's order
// with ArchFilter where the manifests put it.
func TestSetupWithManifestsAndNewerPlugins(t *testing.T) {
	featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, featuregatetesting.FeatureOverrides{
		features.GenericWorkload:                              true,
		features.InPlacePodVerticalScalingSchedulerPreemption: true,
	})
	kubeconfig := fakeKubeconfig(t)
	defaults := upstreamDefaults(t, kubeconfig)
	names := func(ps config.PluginSet) []string {
		var out []string
		for _, p := range ps.Enabled {
			out = append(out, p.Name)
		}
		return out
	}
	for _, name := range []string{"GangScheduling", "DeferredPodScheduling"} {
		if !slices.Contains(names(defaults.MultiPoint), name) && !slices.Contains(names(defaults.Filter), name) &&
			!slices.Contains(names(defaults.PreEnqueue), name) {
			t.Errorf("%s is not among the defaults with its gate on: %+v", name, defaults)
		}
	}
	// 1.37 moved NodeUnschedulable after NodeName; DeferredPodScheduling
	// comes before NodeResourcesFit.
	filter := names(defaults.Filter)
	if i, j := slices.Index(filter, "NodeName"), slices.Index(filter, "NodeUnschedulable"); i < 0 || j < i {
		t.Errorf("Filter defaults %v: want NodeName before NodeUnschedulable (1.37's order)", filter)
	}
	if i, j := slices.Index(filter, "DeferredPodScheduling"), slices.Index(filter, "NodeResourcesFit"); i < 0 || j < i {
		t.Errorf("Filter defaults %v: want DeferredPodScheduling before NodeResourcesFit", filter)
	}
	want := withArchFilter(defaults)
	for _, manifest := range []string{"secondary-scheduler.yaml", "default-scheduler.yaml"} {
		t.Run(manifest, func(t *testing.T) {
			got, err := setup(t, withKubeconfig(t, filepath.Join(manifestDir, manifest), kubeconfig))
			if err != nil {
				t.Fatal(err)
			}
			for profile, plugins := range got {
				if diff := cmp.Diff(want, plugins); diff != "" {
					t.Errorf("profile %s: plugins (-want,+got):\n%s", profile, diff)
				}
			}
		})
	}
}

package charttest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"sigs.k8s.io/yaml"

	afconfig "github.com/archfilter/archfilter/apis/config"
	// ArchFilterArgs in kube-scheduler's configuration scheme, as the scheduler has it.
	_ "github.com/archfilter/archfilter/apis/config/scheme"
	afvalidation "github.com/archfilter/archfilter/apis/config/validation"
)

// schedConfig is the part of the rendered KubeSchedulerConfiguration the tests
// look at, as written (before defaults).
type schedConfig struct {
	LeaderElection struct {
		LeaderElect       bool   `json:"leaderElect"`
		ResourceName      string `json:"resourceName"`
		ResourceNamespace string `json:"resourceNamespace"`
		LeaseDuration     string `json:"leaseDuration"`
		RenewDeadline     string `json:"renewDeadline"`
		RetryPeriod       string `json:"retryPeriod"`
	} `json:"leaderElection"`
	Profiles []struct {
		SchedulerName string `json:"schedulerName"`
		Plugins       struct {
			MultiPoint *pluginSet `json:"multiPoint"`
			PreEnqueue *pluginSet `json:"preEnqueue"`
			Filter     *pluginSet `json:"filter"`
		} `json:"plugins"`
		PluginConfig []struct {
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"pluginConfig"`
	} `json:"profiles"`
}

type pluginSet struct {
	Enabled []struct {
		Name string `json:"name"`
	} `json:"enabled"`
}

// decodeSchedulerConfig decodes a KubeSchedulerConfiguration as kube-scheduler
// decodes --config: strictly, with defaults, ArchFilterArgs converted to the
// internal type by archfilter's apis/config; then the scheduler's validation.
func decodeSchedulerConfig(raw []byte) (*schedconfig.KubeSchedulerConfiguration, error) {
	obj, _, err := kubeschedulerscheme.Codecs.UniversalDecoder().Decode(raw, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil, field.TypeInvalid(field.NewPath("kind"), obj.GetObjectKind().GroupVersionKind().Kind, "not a KubeSchedulerConfiguration")
	}
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// archFilterArgs returns each profile's ArchFilterArgs, validated by
// archfilter's apis/config/validation, by schedulerName.
func archFilterArgs(cfg *schedconfig.KubeSchedulerConfiguration) (map[string]*afconfig.ArchFilterArgs, error) {
	all := map[string]*afconfig.ArchFilterArgs{}
	for i, prof := range cfg.Profiles {
		for j, pc := range prof.PluginConfig {
			if pc.Name != "ArchFilter" {
				continue
			}
			path := field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("args")
			args, ok := pc.Args.(*afconfig.ArchFilterArgs)
			if !ok {
				return nil, field.TypeInvalid(path, pc.Args, "not ArchFilterArgs")
			}
			if err := afvalidation.ValidateArchFilterArgs(path, args); err != nil {
				return nil, err
			}
			all[prof.SchedulerName] = args
		}
	}
	return all, nil
}

// checkSchedulerConfig fails the test unless kube-scheduler and ArchFilter
// accept raw, and returns it as written.
func checkSchedulerConfig(t *testing.T, raw []byte) schedConfig {
	t.Helper()
	cfg, err := decodeSchedulerConfig(raw)
	if err != nil {
		t.Fatalf("kube-scheduler refuses the configuration: %v\n%s", err, raw)
	}
	args, err := archFilterArgs(cfg)
	if err != nil {
		t.Fatalf("ArchFilter refuses its args: %v\n%s", err, raw)
	}
	if len(cfg.Profiles) != 1 || args[cfg.Profiles[0].SchedulerName] == nil {
		t.Fatalf("want one profile with ArchFilter's args, got %d profiles\n%s", len(cfg.Profiles), raw)
	}
	var written schedConfig
	if err := yaml.UnmarshalStrict(raw, &written, yaml.DisallowUnknownFields); err != nil {
		// The struct names only part of the configuration: fall back.
		if err := yaml.Unmarshal(raw, &written); err != nil {
			t.Fatal(err)
		}
	}
	return written
}

// TestConfigDefaultEqualsManifests: with the default values, the chart's
// configuration is manifests/scheduler-config/secondary-scheduler.yaml (the
// base's), and in mode replacement the kubeadm default-scheduler.yaml with
// the base's excluded namespaces: one behaviour, however it is installed.
func TestConfigDefaultEqualsManifests(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		file   string
	}{
		{file: "manifests/scheduler-config/secondary-scheduler.yaml"},
		{values: map[string]any{"mode": "replacement", "archFilterArgs": map[string]any{"excludedNamespaces": nil}}, file: "manifests/scheduler-config/default-scheduler.yaml"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			rendered := schedulerConfig(t, mustRender(t, tc.values, renderOpts{}))
			var got, want map[string]any
			if err := yaml.Unmarshal(rendered, &got); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(readFile(t, tc.file), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the chart's configuration differs from %s (-file,+chart):\n%s", tc.file, diff)
			}
		})
	}
}

// TestConfigAllArgs: every ArchFilterArgs field, as written in
// manifests/scheduler-config/all-args.yaml, given as archFilterArgs values,
// arrives in the plugin's internal args exactly as all-args.yaml's do.
func TestConfigAllArgs(t *testing.T) {
	var file struct {
		Profiles []struct {
			PluginConfig []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	raw := readFile(t, "manifests/scheduler-config/all-args.yaml")
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	for _, pc := range file.Profiles[0].PluginConfig {
		if pc.Name == "ArchFilter" {
			values = pc.Args
		}
	}
	if values == nil {
		t.Fatal("all-args.yaml: no ArchFilter args")
	}
	cfg, err := decodeSchedulerConfig(schedulerConfig(t, mustRender(t, map[string]any{"archFilterArgs": values}, renderOpts{})))
	if err != nil {
		t.Fatal(err)
	}
	got, err := archFilterArgs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fileCfg, err := decodeSchedulerConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, err := archFilterArgs(fileCfg)
	if err != nil {
		t.Fatal(err)
	}
	gotArgs, wantArgs := got["archfilter-scheduler"], want[fileCfg.Profiles[0].SchedulerName]
	if gotArgs == nil || wantArgs == nil {
		t.Fatalf("ArchFilter args: chart %v, all-args.yaml %v", got, want)
	}
	if diff := cmp.Diff(wantArgs, gotArgs); diff != "" {
		t.Errorf("ArchFilterArgs (-all-args.yaml,+chart):\n%s", diff)
	}
	// The file sets every field away from its default: a field the chart
	// dropped would show above, as would one left at the default here.
	if gotArgs.MaxWait != (metav1.Duration{Duration: 45 * time.Second}) {
		t.Errorf("maxWait %v, want all-args.yaml's 45s", gotArgs.MaxWait)
	}
}

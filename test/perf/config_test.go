//go:build !k8s1.35

package perf

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
	"github.com/archfilter/archfilter/test/perf/benchreport"
)

// TestConfig checks the workloads without running them: every scale has every test
// case, each workload measures pods in the measured namespace, and the scheduler
// configurations decode (and validate) the way kube-scheduler decodes --config.
func TestConfig(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rendered := renderConfigTo(t, dir, map[string]string{
		"${REGISTRY_WARM}":      "127.0.0.1:1001",
		"${REGISTRY_COLD}":      "127.0.0.1:1002",
		"${REGISTRY_OUTAGE}":    "127.0.0.1:1003",
		"${REGISTRY_CA}":        ca,
		"${UPSTREAM_TEMPLATES}": upstreamTemplates(t),
	})
	workloads, err := loadWorkloads(filepath.Join(rendered, "performance-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	perScale := map[string][]string{}
	for name := range workloads {
		_, w, _ := strings.Cut(name, "/")
		for _, outage := range []string{"Healthy_", "Down_", "Slow2s_"} {
			w = strings.TrimPrefix(w, outage)
		}
		perScale[w] = append(perScale[w], name) // w: "500Nodes_2000Pods"
	}
	wantCases := []string{"ColdCache_ArchFilter", "Everywhere_ArchFilter", "Everywhere_Default",
		"MixedArch_ArchFilter", "MixedArch_ArchFilterLast", "MixedArch_Default", "MixedArch_NodeAffinity",
		"S390xOnly_ArchFilter", "S390xOnly_NodeAffinity"}
	for _, scale := range []string{"500Nodes_2000Pods", "5000Nodes_10000Pods"} {
		var cases []string
		outage := 0
		for _, name := range perScale[scale] {
			if strings.HasPrefix(name, "Upstream_") {
				continue
			}
			tc, _, _ := strings.Cut(name, "/")
			if tc == "RegistryOutage_ArchFilter" {
				outage++
				continue
			}
			cases = append(cases, tc)
		}
		slices.Sort(cases)
		if diff := cmp.Diff(wantCases, cases); diff != "" {
			t.Errorf("test cases at scale %s (-want,+got):\n%s", scale, diff)
		}
		if outage != 3 {
			t.Errorf("scale %s has %d RegistryOutage workloads, want healthy, down and slow", scale, outage)
		}
	}
	// Upstream's workloads come in pairs that differ only in the profile, with
	// one workload per scale, and the pod templates are upstream's files.
	if n := checkTwins(t, workloads, "Upstream_", "_ArchFilter"); n != 5*3 {
		t.Errorf("%d upstream workloads with the default profile, want 5 test cases × 3 scales", n)
	}
	// The batching workloads come in threes with the same pods: ArchFilter and the
	// default profile with batching on, and the default profile with it off.
	if n := checkTwins(t, workloads, "Batching_", "_ArchFilter", "_Unbatched"); n != 2*3 {
		t.Errorf("%d batching workloads with the default profile, want 2 test cases × 3 scales", n)
	}
	if got := workloads["Upstream_SchedulingPodAffinity_Default/500Nodes"]; got.measuredNamespace != "sched-1" || got.measuredPods != 1000 {
		t.Errorf("pod affinity measures %+v, want 1000 pods in sched-1", got)
	}

	// Even rounds run the same workloads in reverse order.
	reversed, err := writeReversed(filepath.Join(rendered, "performance-config.yaml"), filepath.Join(dir, "reversed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	reversedWorkloads, err := loadWorkloads(reversed)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(workloads, reversedWorkloads, cmp.AllowUnexported(workload{})); diff != "" {
		t.Errorf("reversed configuration has other workloads (-want,+got):\n%s", diff)
	}
	forward, backward := caseNames(t, filepath.Join(rendered, "performance-config.yaml")), caseNames(t, reversed)
	slices.Reverse(backward)
	if len(forward) < 2 || !slices.Equal(forward, backward) {
		t.Errorf("test cases in reverse: %v, want the reverse of %v", backward, forward)
	}
	if got := workloads["ColdCache_ArchFilter/500Nodes_2000Pods"]; got.measuredPods != 2000 {
		t.Errorf("ColdCache at small scale measures %d pods, want 2000", got.measuredPods)
	}

	// The ArchFilter profile measures what the manifests deploy.
	logger, _ := ktesting.NewTestContext(t)
	deployed, err := options.LoadConfigFromFile(logger, filepath.Join("..", "..", "manifests", "scheduler-config", "default-scheduler.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wantPlugins := map[string]*schedconfig.Plugins{
		"archfilter.yaml":          deployed.Profiles[0].Plugins,
		"archfilter-upstream.yaml": deployed.Profiles[0].Plugins,
		"archfilter-batching.yaml": deployed.Profiles[0].Plugins,
		// The same without ArchFilter under filter.
		"archfilter-multipoint-only.yaml": func() *schedconfig.Plugins {
			p := deployed.Profiles[0].Plugins.DeepCopy()
			p.Filter = schedconfig.PluginSet{}
			return p
		}(),
	}

	for _, file := range []string{"default.yaml", "default-batching.yaml", "archfilter.yaml", "archfilter-multipoint-only.yaml",
		"archfilter-upstream.yaml", "archfilter-batching.yaml"} {
		t.Run(file, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			cfg, err := options.LoadConfigFromFile(logger, filepath.Join(rendered, "scheduler", file))
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != "default-scheduler" {
				t.Fatalf("want one default-scheduler profile, got %+v", cfg.Profiles)
			}
			if strings.Contains(file, "batching") {
				// Upstream's batching workloads turn system-default spreading off.
				var spread *schedconfig.PodTopologySpreadArgs
				for _, pc := range cfg.Profiles[0].PluginConfig {
					if a, ok := pc.Args.(*schedconfig.PodTopologySpreadArgs); ok {
						spread = a
					}
				}
				if spread == nil || spread.DefaultingType != schedconfig.ListDefaulting || len(spread.DefaultConstraints) != 0 {
					t.Errorf("PodTopologySpread args %+v, want List defaulting without constraints", spread)
				}
			}
			args := archFilterArgs(cfg.Profiles[0])
			if strings.HasPrefix(file, "default") {
				if args != nil {
					t.Errorf("the baseline configures ArchFilter: %+v", args)
				}
				return
			}
			if args == nil {
				t.Fatal("no ArchFilter args")
			}
			wantRegistries := 3
			if file == "archfilter-upstream.yaml" || file == "archfilter-batching.yaml" {
				wantRegistries = 4
				if m := args.Registries[3]; m.Host != "registry.k8s.io" || len(m.Mirrors) != 1 || m.Mirrors[0] != args.Registries[0].Host {
					t.Errorf("registry.k8s.io is not mirrored by the warm registry: %+v", m)
				}
			}
			if len(args.Registries) != wantRegistries || args.Registries[0].CAFile != ca {
				t.Errorf("registries: %+v", args.Registries)
			}
			if diff := cmp.Diff(wantPlugins[file], cfg.Profiles[0].Plugins); diff != "" {
				t.Errorf("plugins (-want,+got):\n%s", diff)
			}
		})
	}
}

// checkTwins checks that every workload of a test case <prefix>…_Default has a twin
// in each test case <prefix>…<suffix> with the same pods, and returns how many
// such default workloads there are.
func checkTwins(t *testing.T, workloads map[string]workload, prefix string, suffixes ...string) int {
	t.Helper()
	n := 0
	for name, w := range workloads {
		tc, wl, _ := strings.Cut(name, "/")
		base, ok := strings.CutSuffix(tc, "_Default")
		if !strings.HasPrefix(tc, prefix) || !ok {
			continue
		}
		n++
		for _, suffix := range suffixes {
			if other, ok := workloads[base+suffix+"/"+wl]; !ok || other != w {
				t.Errorf("%s has no twin %s%s/%s with the same pods (got %+v, want %+v)", name, base, suffix, wl, other, w)
			}
		}
	}
	return n
}

func archFilterArgs(p schedconfig.KubeSchedulerProfile) *config.ArchFilterArgs {
	for _, pc := range p.PluginConfig {
		if pc.Name == archfilter.Name {
			args, _ := pc.Args.(*config.ArchFilterArgs)
			return args
		}
	}
	return nil
}

func caseNames(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct{ Name string }
	if err := yaml.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(cases))
	for _, c := range cases {
		names = append(names, c.Name)
	}
	return names
}

// TestUpstreamWorkloadsAreUpstreams: the Upstream_* test cases run upstream's own
// workloads as Kubernetes 1.37's scheduler_perf configuration (in the module cache)
// defines them: every workload named as one of upstream's has upstream's sizes, the
// full scale is a workload upstream labels "performance", and the thresholds the
// report shows (benchreport.UpstreamThresholds) are upstream's.
func TestUpstreamWorkloadsAreUpstreams(t *testing.T) {
	type upstreamWorkload struct {
		Name      string
		Labels    []string
		Threshold float64
		Params    map[string]any // counts, and a few strings (PreemptionBasic's disruptionMode)
	}
	upstream := map[string]map[string]upstreamWorkload{} // test case -> workload name -> workload
	// The directories of the test cases test/perf runs (upstreamCases).
	for _, dir := range []string{"misc", "affinity", "topology_spreading", "default_preemption"} {
		f := filepath.Join(filepath.Dir(upstreamTemplates(t)), dir, "performance-config.yaml")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cases []struct {
			Name      string
			Workloads []upstreamWorkload
		}
		if err := yaml.Unmarshal(data, &cases); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tc := range cases {
			if upstream[tc.Name] == nil {
				upstream[tc.Name] = map[string]upstreamWorkload{}
			}
			for _, w := range tc.Workloads {
				upstream[tc.Name][w.Name] = w
			}
		}
	}
	data, err := os.ReadFile("config/performance-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ours []struct {
		Name      string
		Workloads []upstreamWorkload
	}
	if err := yaml.Unmarshal(data, &ours); err != nil {
		t.Fatal(err)
	}
	thresholds := map[string]float64{}
	var checked int
	for _, tc := range ours {
		name, ok := strings.CutPrefix(tc.Name, "Upstream_")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(strings.TrimSuffix(name, "_Default"), "_ArchFilter")
		theirs, ok := upstream[name]
		if !ok {
			t.Errorf("%s: upstream has no test case %s", tc.Name, name)
			continue
		}
		for _, w := range tc.Workloads {
			u, named := theirs[w.Name]
			if slices.Contains(w.Labels, "full") {
				if !named || !slices.Contains(u.Labels, "performance") {
					t.Errorf("%s/%s: the full scale is not a workload upstream's 1.37 configuration labels performance", tc.Name, w.Name)
				}
			}
			if !named {
				continue
			}
			checked++
			if !reflect.DeepEqual(u.Params, w.Params) {
				t.Errorf("%s/%s: params %v, upstream's %v", tc.Name, w.Name, w.Params, u.Params)
			}
			if u.Threshold > 0 {
				thresholds[name+"/"+w.Name] = u.Threshold
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d workloads matched upstream's by name", checked)
	}
	if diff := cmp.Diff(thresholds, benchreport.UpstreamThresholds); diff != "" {
		t.Errorf("benchreport.UpstreamThresholds (-upstream's,+report's):\n%s", diff)
	}
}

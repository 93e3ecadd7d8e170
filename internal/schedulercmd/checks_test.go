package schedulercmd

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// Settings that would be accepted and then do nothing stop the start, naming
// the profile and the field; the shipped configurations pass.
func TestCheckProfiles(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	const swap = `
    multiPoint:
      enabled: [{name: ArchFilter}, {name: ArchAwareTaintToleration}]
      disabled: [{name: TaintToleration}]`
	const both = `
    multiPoint:
      enabled: [{name: ArchFilter}, {name: ArchAwareTaintToleration}]`
	const plain = `
    multiPoint:
      enabled: [{name: ArchFilter}]`
	profile := func(plugins, args string) string {
		return `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: archfilter-scheduler
  plugins:` + plugins + `
  pluginConfig:
  - name: ArchFilter
    args: {` + args + `}
`
	}
	for _, tc := range []struct {
		name   string
		config string
		file   string // a shipped configuration instead
		want   []string
	}{
		{name: "wrapper swapped in, archTaintToleration on", config: profile(swap, "archTaintToleration: true")},
		{name: "archTaintToleration off, no wrapper", config: profile(plain, "archTaintToleration: false")},
		{
			name:   "archTaintToleration without the wrapper",
			config: profile(plain, "archTaintToleration: true"),
			want:   []string{"profiles[0] (schedulerName archfilter-scheduler).pluginConfig[", "args.archTaintToleration: true does nothing unless ArchAwareTaintToleration replaces TaintToleration"},
		},
		{
			name:   "wrapper beside the in-tree plugin",
			config: profile(both, "archTaintToleration: true"),
			want:   []string{"profiles[0] (schedulerName archfilter-scheduler): TaintToleration and ArchAwareTaintToleration are both Filter plugins"},
		},
		// ArchFilter's PreFilter, Filter and Reserve go together.
		{name: "multiPoint", config: profile(plain, "")},
		{
			name: "listed one by one with reserve",
			config: profile(`
    preEnqueue: {enabled: [{name: ArchFilter}]}
    preFilter: {enabled: [{name: ArchFilter}]}
    filter: {enabled: [{name: ArchFilter}]}
    reserve: {enabled: [{name: ArchFilter}]}`, ""),
		},
		{
			name: "listed one by one without reserve",
			config: profile(`
    preFilter: {enabled: [{name: ArchFilter}]}
    filter: {enabled: [{name: ArchFilter}]}
    score: {enabled: [{name: ArchFilter}]}`, ""),
			want: []string{"profiles[0] (schedulerName archfilter-scheduler): ArchFilter is enabled at PreFilter, whose Skip of Filter relies on its Reserve check, but not at Reserve",
				"enable it at reserve (plugins.reserve.enabled), or under plugins.multiPoint.enabled"},
		},
		{
			name: "disabled at reserve",
			config: profile(plain+`
    reserve: {disabled: [{name: ArchFilter}]}`, ""),
			want: []string{"profiles[0] (schedulerName archfilter-scheduler): ArchFilter is enabled at PreFilter, whose Skip of Filter relies on its Reserve check, but not at Reserve",
				"remove ArchFilter from plugins.reserve.disabled"},
		},
		{
			name: "every multiPoint plugin disabled at reserve",
			config: profile(plain+`
    reserve: {disabled: [{name: "*"}]}`, ""),
			want: []string{"but not at Reserve", `plugins.reserve.disabled has "*"`, "list ArchFilter under plugins.reserve.enabled"},
		},
		{
			name: "every multiPoint plugin disabled at reserve, ArchFilter listed there",
			config: profile(plain+`
    reserve: {enabled: [{name: ArchFilter}], disabled: [{name: "*"}]}`, ""),
		},
		{
			name: "disabled at filter",
			config: profile(plain+`
    filter: {disabled: [{name: ArchFilter}]}`, ""),
			want: []string{"profiles[0] (schedulerName archfilter-scheduler): ArchFilter is enabled at PreFilter but not at Filter",
				"remove ArchFilter from plugins.filter.disabled, or disable it at preFilter too"},
		},
		{
			name: "disabled at preFilter",
			config: profile(plain+`
    preFilter: {disabled: [{name: ArchFilter}]}`, ""),
			want: []string{"profiles[0] (schedulerName archfilter-scheduler): ArchFilter is enabled at Filter but not at PreFilter", "every Filter call would fail",
				"remove ArchFilter from plugins.preFilter.disabled"},
		},
		{
			name: "holding and scoring only",
			config: profile(plain+`
    preFilter: {disabled: [{name: ArchFilter}]}
    filter: {disabled: [{name: ArchFilter}]}
    reserve: {disabled: [{name: ArchFilter}]}`, ""),
		},
		{
			name: "the second profile is named",
			config: profile(plain, "") + `- schedulerName: second
  plugins:
    preFilter: {enabled: [{name: ArchFilter}]}
    filter: {enabled: [{name: ArchFilter}]}
`,
			want: []string{"profiles[1] (schedulerName second): ArchFilter is enabled at PreFilter, whose Skip of Filter relies on its Reserve check, but not at Reserve"},
		},
		{name: "all-args.yaml", file: "all-args.yaml"},
		{name: "secondary-scheduler.yaml", file: "secondary-scheduler.yaml"},
		{name: "default-scheduler.yaml", file: "default-scheduler.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join("..", "..", "manifests", "scheduler-config", tc.file)
			if tc.file == "" {
				path = writeFile(t, t.TempDir(), "config.yaml", tc.config)
			}
			cfg, err := options.LoadConfigFromFile(logger, path)
			if err != nil {
				t.Fatal(err)
			}
			err = checkProfiles(cfg)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The command stops before kube-scheduler starts, with the profile and the
// missing extension point named (no API server is needed to get there).
func TestCommandRefusesUnsafeProfile(t *testing.T) {
	config := writeFile(t, t.TempDir(), "config.yaml", `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: /nonexistent}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: archfilter
  plugins:
    multiPoint: {enabled: [{name: ArchFilter}]}
    reserve: {disabled: [{name: ArchFilter}]}
`)
	cmd := New(ArchFilterPlugins()...)
	cmd.SetArgs([]string{"--config", config})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	want := "profiles[0] (schedulerName archfilter): ArchFilter is enabled at PreFilter, whose Skip of Filter relies on its Reserve check, but not at Reserve"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
}

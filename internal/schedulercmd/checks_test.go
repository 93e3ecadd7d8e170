package schedulercmd

import (
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

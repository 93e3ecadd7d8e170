package schedulercmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// refuseSilentSettings loads the --config file as kube-scheduler will and
// refuses settings that would be accepted and then do nothing.
func refuseSilentSettings(c *cobra.Command) error {
	cf := c.Flags().Lookup("config")
	if cf == nil || cf.Value.String() == "" {
		return nil
	}
	cfg, err := options.LoadConfigFromFile(klog.Background(), cf.Value.String())
	if err != nil {
		return nil // kube-scheduler reports it, with its own message
	}
	return checkProfiles(cfg)
}

// checkProfiles reports, per profile, ArchAwareTaintToleration enabled beside
// TaintToleration (the in-tree one would still reject arch taints: the
// wrapper must replace it), and archTaintToleration set where no
// ArchAwareTaintToleration reads it.
func checkProfiles(cfg *schedconfig.KubeSchedulerConfiguration) error {
	var errs []error
	for i, prof := range cfg.Profiles {
		path := fmt.Sprintf("profiles[%d] (schedulerName %s)", i, prof.SchedulerName)
		inTree := filters(prof.Plugins, "TaintToleration")
		wrapper := filters(prof.Plugins, archfilter.TaintTolerationName)
		if inTree && wrapper {
			errs = append(errs, fmt.Errorf("%s: TaintToleration and %s are both Filter plugins, so arch taints are still refused by TaintToleration: "+
				"disable TaintToleration (plugins.multiPoint.disabled) where %s is enabled", path, archfilter.TaintTolerationName, archfilter.TaintTolerationName))
		}
		for j, pc := range prof.PluginConfig {
			args, ok := pc.Args.(*config.ArchFilterArgs)
			if !ok || pc.Name != archfilter.Name || !args.ArchTaintToleration || wrapper {
				continue
			}
			errs = append(errs, fmt.Errorf("%s.pluginConfig[%d].args.archTaintToleration: true does nothing unless %s replaces TaintToleration "+
				"in this profile (enable %s and disable TaintToleration under plugins.multiPoint)", path, j,
				archfilter.TaintTolerationName, archfilter.TaintTolerationName))
		}
	}
	return errors.Join(errs...)
}

// filters reports whether the profile runs plugin name at Filter: enabled
// under multiPoint (defaults included) or filter, and not disabled at filter.
func filters(p *schedconfig.Plugins, name string) bool {
	if p == nil {
		return false
	}
	for _, d := range p.Filter.Disabled {
		if d.Name == name || d.Name == "*" {
			return false
		}
	}
	for _, set := range []schedconfig.PluginSet{p.MultiPoint, p.Filter} {
		for _, e := range set.Enabled {
			if e.Name == name {
				return true
			}
		}
	}
	return false
}

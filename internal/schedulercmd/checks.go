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

// checkProfiles reports, per profile, ArchFilter enabled at some of PreFilter,
// Filter and Reserve but not all three (archFilterPoints),
// ArchAwareTaintToleration enabled beside TaintToleration (the in-tree one
// would still reject arch taints: the wrapper must replace it), and
// archTaintToleration set where no ArchAwareTaintToleration reads it.
func checkProfiles(cfg *schedconfig.KubeSchedulerConfiguration) error {
	var errs []error
	for i, prof := range cfg.Profiles {
		path := fmt.Sprintf("profiles[%d] (schedulerName %s)", i, prof.SchedulerName)
		errs = append(errs, archFilterPoints(path, prof.Plugins)...)
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

// archFilterPoints reports a profile that enables ArchFilter at PreFilter or
// Filter but not at all of PreFilter, Filter and Reserve, which only work
// together:
//   - Filter reads the platforms PreFilter computed: without PreFilter, every
//     Filter call fails and no pod of the profile is scheduled.
//   - PreFilter alone narrows a cycle to the nodes of the pod's platforms only
//     when they are at most half of the cluster; without Filter, every other
//     pod may land on a node it cannot run on.
//   - PreFilter skips Filter when the pod's platforms allow every platform of
//     ArchFilter's node table, which may lag the scheduler's snapshot; Reserve
//     checks the node the cycle chose (reserve.go). Without it, a pod can be
//     bound to a node of a platform new to the table.
//
// A profile with ArchFilter at neither PreFilter nor Filter (PreEnqueue and
// Score only: it holds pods until their images are resolved, and prefers
// platforms) is consistent and accepted; so is Reserve alone, which then does
// nothing.
func archFilterPoints(path string, p *schedconfig.Plugins) []error {
	if p == nil {
		return nil
	}
	pre := enabledAt(p, p.PreFilter, archfilter.Name)
	filter := enabledAt(p, p.Filter, archfilter.Name)
	if !pre && !filter {
		return nil
	}
	var errs []error
	if !pre {
		errs = append(errs, fmt.Errorf("%s: %s is enabled at Filter but not at PreFilter, which computes the pod's platforms that Filter reads: "+
			"every Filter call would fail; %s", path, archfilter.Name, howToEnable(p.PreFilter, "preFilter")))
	}
	if !filter {
		errs = append(errs, fmt.Errorf("%s: %s is enabled at PreFilter but not at Filter: a pod would be kept off nodes of other platforms "+
			"only when PreFilter can narrow the cycle to its platforms' nodes (at most half the cluster), and could land on any node otherwise; "+
			"%s, or disable it at preFilter too (ArchFilter then only holds pods until their images are resolved, and scores)",
			path, archfilter.Name, howToEnable(p.Filter, "filter")))
	}
	if pre && !enabledAt(p, p.Reserve, archfilter.Name) {
		errs = append(errs, fmt.Errorf("%s: %s is enabled at PreFilter, whose Skip of Filter relies on its Reserve check, but not at Reserve: "+
			"a pod could be bound to a node of a platform its node table does not know yet; %s", path, archfilter.Name, howToEnable(p.Reserve, "reserve")))
	}
	return errs
}

// howToEnable says how to enable ArchFilter at the extension point whose
// plugin set is set and whose configuration field is field.
func howToEnable(set schedconfig.PluginSet, field string) string {
	for _, d := range set.Disabled {
		switch d.Name {
		case archfilter.Name:
			return fmt.Sprintf("remove %s from plugins.%s.disabled", archfilter.Name, field)
		case "*":
			return fmt.Sprintf("plugins.%s.disabled has \"*\", which also turns off plugins enabled under multiPoint there: list %s under plugins.%s.enabled",
				field, archfilter.Name, field)
		}
	}
	return fmt.Sprintf("enable it at %s (plugins.%s.enabled), or under plugins.multiPoint.enabled", field, field)
}

// enabledAt reports whether the profile runs plugin name at the extension
// point whose plugin set is set, as the framework builds it (frameworkruntime's
// expandMultiPointPlugins): listed under that point's enabled, or under
// multiPoint's (defaults included) and disabled at that point neither by name
// nor by "*". The plugin must implement the extension point.
func enabledAt(p *schedconfig.Plugins, set schedconfig.PluginSet, name string) bool {
	for _, e := range set.Enabled {
		if e.Name == name {
			return true
		}
	}
	for _, d := range set.Disabled {
		if d.Name == name || d.Name == "*" {
			return false
		}
	}
	for _, e := range p.MultiPoint.Enabled {
		if e.Name == name {
			return true
		}
	}
	return false
}

// filters reports whether the profile runs plugin name at Filter.
func filters(p *schedconfig.Plugins, name string) bool {
	return p != nil && enabledAt(p, p.Filter, name)
}

package kubectlplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/policystore"
)

// ConfigLabel marks the ConfigMaps that hold archfilter's configuration, as the
// chart and kustomize install them: "scheduler" (a KubeSchedulerConfiguration
// under config.yaml) or "placement" (the companion's ArchFilterArgs under
// args.yaml). kubectl archfilter reads them to decide as the cluster does.
const (
	ConfigLabel          = "archfilter.io/config"
	ConfigLabelScheduler = "scheduler"
	ConfigLabelPlacement = "placement"
)

// pluginName is the scheduler plugin's name in a KubeSchedulerConfiguration.
const pluginName = "ArchFilter"

// clusterConfig is archfilter's configuration as found in the cluster.
type clusterConfig struct {
	// source names it for people: "ConfigMap kube-system/archfilter-scheduler-config (scheduler)".
	source string
	// args is an ArchFilterArgs document.
	args []byte
	// schedulers are the names of the profiles that run ArchFilter (none for
	// the companion's configuration).
	schedulers []string
}

// findClusterConfig returns the configuration the cluster's archfilter runs
// with: a scheduler's, else the placement mode's; nil when none is found.
// An error says why it could not look (permissions) or read one.
func findClusterConfig(ctx context.Context, client kubernetes.Interface) (*clusterConfig, error) {
	list, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: ConfigLabel})
	if err != nil {
		return nil, fmt.Errorf("listing ConfigMaps labelled %s: %w", ConfigLabel, err)
	}
	cms := list.Items
	// A scheduler's configuration first, then by namespace and name.
	rank := func(cm *v1.ConfigMap) int {
		if cm.Labels[ConfigLabel] == ConfigLabelScheduler {
			return 0
		}
		return 1
	}
	sort.SliceStable(cms, func(i, j int) bool {
		a, b := &cms[i], &cms[j]
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	for i := range cms {
		cm := &cms[i]
		source := fmt.Sprintf("ConfigMap %s/%s (%s)", cm.Namespace, cm.Name, cm.Labels[ConfigLabel])
		if others := len(cms) - 1; others > 0 {
			source += fmt.Sprintf("; %d other archfilter configuration(s) found, --args picks another", others)
		}
		switch cm.Labels[ConfigLabel] {
		case ConfigLabelScheduler:
			data, ok := cm.Data["config.yaml"]
			if !ok {
				continue
			}
			args, names, err := argsOfSchedulerConfig([]byte(data))
			if err != nil {
				return nil, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
			}
			if args == nil {
				continue
			}
			return &clusterConfig{source: source, args: args, schedulers: names}, nil
		case ConfigLabelPlacement:
			data, ok := cm.Data["args.yaml"]
			if !ok {
				continue
			}
			return &clusterConfig{source: source, args: []byte(data)}, nil
		}
	}
	return nil, nil
}

// schedulerConfig is the part of a KubeSchedulerConfiguration read here.
type schedulerConfig struct {
	Profiles []schedulerProfile `json:"profiles"`
}

// schedulerProfile is one profile of a KubeSchedulerConfiguration.
type schedulerProfile struct {
	SchedulerName string `json:"schedulerName"`
	Plugins       map[string]struct {
		Enabled []struct {
			Name string `json:"name"`
		} `json:"enabled"`
	} `json:"plugins"`
	PluginConfig []struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"pluginConfig"`
}

// name is the profile's scheduler name, kube-scheduler's default when unset.
func (p *schedulerProfile) name() string {
	if p.SchedulerName == "" {
		return v1.DefaultSchedulerName
	}
	return p.SchedulerName
}

// runsArchFilter reports whether the profile enables ArchFilter at an
// extension point (multiPoint or another): the one rule, for the args that
// are read and for which front-end decides (frontEnds).
func (p *schedulerProfile) runsArchFilter() bool {
	for _, set := range p.Plugins {
		for _, e := range set.Enabled {
			if e.Name == pluginName {
				return true
			}
		}
	}
	return false
}

func parseSchedulerConfig(data []byte) (*schedulerConfig, error) {
	var cfg schedulerConfig
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("config.yaml: %w", err)
	}
	return &cfg, nil
}

// argsOfSchedulerConfig returns the ArchFilterArgs of the first profile that
// runs ArchFilter, as a document of its own, and the names of every profile
// that runs it; nil args when none does.
func argsOfSchedulerConfig(data []byte) ([]byte, []string, error) {
	cfg, err := parseSchedulerConfig(data)
	if err != nil {
		return nil, nil, err
	}
	var (
		args  []byte
		names []string
	)
	for _, p := range cfg.Profiles {
		if !p.runsArchFilter() {
			continue
		}
		name := p.name()
		names = append(names, name)
		if args != nil {
			continue
		}
		doc := map[string]any{}
		for _, pc := range p.PluginConfig {
			if pc.Name == pluginName && len(pc.Args) > 0 {
				if err := json.Unmarshal(pc.Args, &doc); err != nil {
					return nil, nil, fmt.Errorf("config.yaml: profile %s: pluginConfig %s: %w", name, pluginName, err)
				}
			}
		}
		doc["apiVersion"], doc["kind"] = "kubescheduler.config.k8s.io/v1", "ArchFilterArgs"
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, nil, err
		}
		args = b
	}
	return args, names, nil
}

// profileOf is one profile of a scheduler configuration the cluster holds.
type profileOf struct {
	name string
	// source names the ConfigMap: "ConfigMap kube-system/archfilter-scheduler-config".
	source         string
	runsArchFilter bool
}

// schedulerProfiles lists the profiles of the scheduler configurations the
// cluster holds (ConfigMaps labelled ConfigLabel=scheduler, key config.yaml),
// in namespace/name order. An error says why they could not be listed or one
// could not be read; the profiles read before it are returned with it.
func schedulerProfiles(ctx context.Context, client kubernetes.Interface) ([]profileOf, error) {
	list, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: ConfigLabel + "=" + ConfigLabelScheduler})
	if err != nil {
		return nil, fmt.Errorf("listing ConfigMaps labelled %s=%s: %w", ConfigLabel, ConfigLabelScheduler, err)
	}
	cms := list.Items
	sort.Slice(cms, func(i, j int) bool { return cms[i].Namespace+"/"+cms[i].Name < cms[j].Namespace+"/"+cms[j].Name })
	var out []profileOf
	for i := range cms {
		cm := &cms[i]
		data, ok := cm.Data["config.yaml"]
		if !ok {
			continue
		}
		cfg, err := parseSchedulerConfig([]byte(data))
		if err != nil {
			return out, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
		for _, p := range cfg.Profiles {
			out = append(out, profileOf{name: p.name(), source: fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name), runsArchFilter: p.runsArchFilter()})
		}
	}
	return out, nil
}

// clusterPolicies reads the ArchFilterPolicy objects of a namespace from the
// cluster, once per namespace. When they cannot be read (the CRD is not
// installed, access is forbidden), it decides without policies and note says
// why, once.
func clusterPolicies(ctx context.Context, client dynamic.Interface, note func(string)) decision.PolicyLookup {
	seen := map[string][]*decision.Policy{}
	failed := false
	return func(namespace string) []*decision.Policy {
		if ps, ok := seen[namespace]; ok || failed {
			return ps
		}
		list, err := client.Resource(policyv1alpha1.SchemeGroupVersionResource).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			failed = true
			switch {
			case apierrors.IsNotFound(err):
				note(fmt.Sprintf("no ArchFilterPolicy applied: the CRD %s is not installed", policyv1alpha1.SchemeGroupResource))
			default:
				note(fmt.Sprintf("no ArchFilterPolicy applied: listing %s in %s: %v", policyv1alpha1.SchemeGroupResource, namespace, err))
			}
			return nil
		}
		var ps []*decision.Policy
		for i := range list.Items {
			obj, err := policystore.FromObject(&list.Items[i])
			if err != nil {
				note(err.Error())
				continue
			}
			p, err := decision.ParsePolicy(obj)
			if err != nil {
				note(fmt.Sprintf("not applied: %v", err))
				continue
			}
			ps = append(ps, p)
		}
		decision.SortPolicies(ps)
		seen[namespace] = ps
		return ps
	}
}

// filePolicies indexes the policies found among check's files by namespace;
// a policy without a namespace is in defaultNamespace.
func filePolicies(objs []*policyv1alpha1.ArchFilterPolicy, defaultNamespace string) (decision.PolicyLookup, []error) {
	byNS := map[string][]*decision.Policy{}
	var errs []error
	for _, obj := range objs {
		if obj.Namespace == "" {
			obj.Namespace = defaultNamespace
		}
		p, err := decision.ParsePolicy(obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		byNS[obj.Namespace] = append(byNS[obj.Namespace], p)
	}
	for _, ps := range byNS {
		decision.SortPolicies(ps)
	}
	return func(namespace string) []*decision.Policy { return byNS[namespace] }, errs
}

// policyNote describes the policy that governed a decision, for people.
func policyNote(p *decision.Policy) string {
	if p == nil {
		return ""
	}
	s := p.String()
	if len(p.Ignored) > 0 {
		parts := make([]string, len(p.Ignored))
		for i, f := range p.Ignored {
			parts[i] = string(f)
		}
		s += "; ignored, as ArchFilterArgs.policies.allowedOverrides leave out: " + strings.Join(parts, ", ")
	}
	return s
}

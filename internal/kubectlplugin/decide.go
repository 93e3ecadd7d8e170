package kubectlplugin

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/apis/config/argsfile"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// decisionFlags give the commands that judge pods (check, why, report) the
// settings the cluster's scheduler and placement mode run with, so that they
// decide as those do (package decision).
type decisionFlags struct {
	argsFile   string
	run32Bit   []string
	schedulers []string
	cmd        *cobra.Command
	// source names the configuration load used, for the output.
	source string
}

func (f *decisionFlags) add(cmd *cobra.Command) {
	f.cmd = cmd
	fs := cmd.Flags()
	fs.StringVar(&f.argsFile, "args", "", "file holding the ArchFilterArgs to decide with (apiVersion kubescheduler.config.k8s.io/v1, kind ArchFilterArgs): their scope, failure policy, fallback and preferred platforms, registries, policies; default: the deployed scheduler's (or placement mode's) configuration, found by the label "+ConfigLabel+", else the plugin's defaults")
	fs.StringSliceVar(&f.run32Bit, "run-32bit", nil, "host architectures that run their 32-bit counterpart's images ("+platform.AMD64Runs386+", "+platform.ARM64RunsARM+"): ArchFilterArgs.run32BitImagesOn, without an --args file")
	fs.StringSliceVar(&f.schedulers, "scheduler-name", []string{decision.DefaultSchedulerName}, "scheduler names whose profiles run ArchFilter (repeatable). Without it: the ArchFilter profiles of the deployed scheduler configuration (label "+ConfigLabel+"); why and report also read ArchFilter's events and the placement webhook, and say when they cannot know; check falls back to the default shown. check judges pods naming another scheduler as the placement mode does")
}

// load reads --args (or the defaults) and the flags into the settings package
// decision uses, and returns the args for the registry settings they carry.
func (f *decisionFlags) load() (*decision.Settings, *config.ArchFilterArgs, error) {
	args, err := argsfile.Load("--args", f.argsFile, nil)
	if err != nil {
		return nil, nil, &ExitError{Code: ExitInputError, Msg: err.Error()}
	}
	f.source = "the plugin's defaults"
	if f.argsFile != "" {
		f.source = "--args " + f.argsFile
	}
	return f.settings(args)
}

// loadFromCluster is load, with the configuration the cluster's archfilter
// runs with when --args is not given (findClusterConfig): its ArchFilterArgs
// and, unless --scheduler-name is given, the names of its ArchFilter profiles.
// When none is found or it cannot be read, the defaults apply and the source
// says why.
func (f *decisionFlags) loadFromCluster(ctx context.Context, client kubernetes.Interface) (*decision.Settings, *config.ArchFilterArgs, error) {
	if f.argsFile != "" {
		return f.load()
	}
	found, err := findClusterConfig(ctx, client)
	if err != nil || found == nil {
		s, args, lerr := f.load()
		switch {
		case err != nil:
			f.source = fmt.Sprintf("the plugin's defaults (the cluster's configuration could not be read: %v; --args names one)", err)
		default:
			f.source = fmt.Sprintf("the plugin's defaults (no ConfigMap labelled %s in the cluster; --args names a configuration)", ConfigLabel)
		}
		return s, args, lerr
	}
	args, err := argsfile.Parse("the cluster's configuration", found.source, found.args, nil)
	if err != nil {
		return nil, nil, &ExitError{Code: ExitInputError, Msg: err.Error() + "; --args overrides it"}
	}
	f.source = found.source
	if len(found.schedulers) > 0 && (f.cmd == nil || !f.cmd.Flags().Changed("scheduler-name")) {
		f.schedulers = found.schedulers
	}
	return f.settings(args)
}

// settings applies the flags to args and parses them.
func (f *decisionFlags) settings(args *config.ArchFilterArgs) (*decision.Settings, *config.ArchFilterArgs, error) {
	if len(f.run32Bit) > 0 {
		if f.argsFile != "" && len(args.Run32BitImagesOn) > 0 {
			return nil, nil, &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("--run-32bit and --args %s (run32BitImagesOn) both set the 32-bit rule: use one", f.argsFile)}
		}
		for _, h := range f.run32Bit {
			if h != platform.AMD64Runs386 && h != platform.ARM64RunsARM {
				return nil, nil, &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("--run-32bit %q: want %s or %s", h, platform.AMD64Runs386, platform.ARM64RunsARM)}
			}
		}
		args.Run32BitImagesOn = f.run32Bit
	}
	s, err := decision.NewSettings(args)
	if err != nil {
		return nil, nil, &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("%s: %v", f.source, err)}
	}
	s.Schedulers = sets.New(f.schedulers...)
	return s, args, nil
}

// decider judges pods as archfilter does.
type decider struct {
	settings *decision.Settings
	// namespaces reads a namespace's labels, for a namespaceSelector; nil
	// without a cluster (check -f), when namespaces are not known.
	namespaces decision.NamespaceLabels
	// policies reads the ArchFilterPolicy objects: the cluster's, or those
	// among check's files; nil without any.
	policies decision.PolicyLookup
	// config names the configuration decided with.
	config string
	// notes are what kept the decisions from being the cluster's (policies
	// that could not be read), each once.
	notes []string
}

// note records a note once.
func (dc *decider) note(s string) {
	if !slices.Contains(dc.notes, s) {
		dc.notes = append(dc.notes, s)
	}
}

// rules are the settings for pod: the configuration's, with its policy.
func (dc *decider) rules(pod *v1.Pod) *decision.Settings {
	return dc.settings.ForPod(pod, dc.policies)
}

// clusterNamespaces reads namespaces' labels from the cluster, once each.
func clusterNamespaces(ctx context.Context, client kubernetes.Interface) decision.NamespaceLabels {
	seen := map[string]labels.Set{}
	return func(name string) (labels.Set, bool) {
		if l, ok := seen[name]; ok {
			return l, l != nil
		}
		ns, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			seen[name] = nil
			return nil, false
		}
		seen[name] = labels.Set(ns.Labels)
		return ns.Labels, true
	}
}

// judgement is what archfilter decides for one pod.
type judgement struct {
	front decision.Front
	// skip is why archfilter leaves the pod alone; "" when it applies.
	skip decision.SkipReason
	// d is the decision for a pod in scope, and for a DaemonSet pod under
	// daemonSetPolicy Skip what its images allow (the plugin warns by it).
	d decision.Decision
	// read is true when the pod's images were read from registries.
	read bool
	// policy is the ArchFilterPolicy that governs the pod, nil if none.
	policy *decision.Policy
}

// reads reports whether archfilter reads pod's images from registries, and so
// whether the commands resolve them: not when it declares its platforms, and
// not when it is out of scope (but for DaemonSet pods under daemonSetPolicy Skip).
func (dc *decider) reads(pod *v1.Pod) bool {
	skip := dc.rules(pod).Scope(pod, dc.settings.FrontOf(pod), dc.namespaces)
	return (skip == "" || skip.ReadsImages()) && !decision.Declared(pod)
}

// images lists the images of the workloads the commands must resolve, once each.
func (dc *decider) images(ws []workload) []string {
	var images []string
	seen := map[string]bool{}
	for _, w := range ws {
		if !dc.reads(w.Pod) {
			continue
		}
		for _, ref := range podplatform.Images(w.Pod) {
			if !seen[ref] {
				seen[ref] = true
				images = append(images, ref)
			}
		}
	}
	return images
}

// judge decides for pod from results, the registries' answers for its images.
func (dc *decider) judge(pod *v1.Pod, results map[string]resolver.Result) judgement {
	rules := dc.rules(pod)
	j := judgement{front: dc.settings.FrontOf(pod), policy: rules.Policy}
	j.skip = rules.Scope(pod, j.front, dc.namespaces)
	j.read = (j.skip == "" || j.skip.ReadsImages()) && !decision.Declared(pod)
	rules = rules.ForImagesOf(j.skip)
	if j.skip == "" || j.skip.ReadsImages() {
		j.d = rules.Decide(pod, func(image string) (resolver.Result, bool) {
			res, ok := results[image]
			return res, ok
		})
	}
	return j
}

// outcome names what archfilter does to the pod (decision.Outcome*).
func (j *judgement) outcome() string {
	if j.skip != "" {
		return decision.OutcomeSkipped
	}
	return j.d.Outcome()
}

// allowed is where archfilter lets the pod run: the decision's platforms, none
// when it rejects the pod, any when it leaves the pod alone.
func (j *judgement) allowed() platform.Set {
	switch {
	case j.skip != "":
		return platform.Any()
	case j.d.Rejection != nil:
		return platform.NewSet()
	}
	return j.d.Platforms
}

// decisionView is archfilter's decision for a pod, as printed.
type decisionView struct {
	// By is the front-end that decides: "scheduler" (its ArchFilter plugin) or
	// "placement mode".
	By string `json:"by"`
	// Outcome is constrained, unconstrained, failed-open, rejected or skipped.
	Outcome string `json:"outcome"`
	// Skipped says why archfilter leaves the pod alone.
	Skipped string `json:"skipped,omitempty"`
	// Platforms are those archfilter lets the pod run on ("*" any).
	Platforms string `json:"platforms,omitempty"`
	// Source says where they came from: images, or the pod's annotation.
	Source    string `json:"source,omitempty"`
	Preferred string `json:"preferred,omitempty"`
	// Message is the rejection, or what did not resolve.
	Message string `json:"message,omitempty"`
	// Config names the configuration decided with; Policy, the
	// ArchFilterPolicy that governs the pod and what it sets.
	Config string `json:"config,omitempty"`
	Policy string `json:"policy,omitempty"`
}

func (dc *decider) view(pod *v1.Pod, j *judgement) decisionView {
	v := decisionView{By: j.front.String(), Outcome: j.outcome(), Skipped: string(j.skip), Config: dc.config, Policy: policyNote(j.policy)}
	if j.skip != "" {
		return v
	}
	v.Source = string(j.d.Source)
	switch {
	case j.d.Rejection != nil:
		v.Message = j.d.Rejection.Message
	default:
		v.Platforms = j.d.Platforms.String()
		if j.d.FailedOpen {
			v.Message = "unresolved (failurePolicy Ignore): " + j.d.Unresolved()
		}
	}
	if prefs, from, invalid := dc.rules(pod).Preferred(pod); len(prefs) > 0 || invalid != nil {
		if len(prefs) > 0 {
			v.Preferred = decision.PreferencesString(prefs) + " (" + string(from) + ")"
		}
		if invalid != nil {
			v.Preferred += "; ignored " + invalid.Error()
		}
	}
	return v
}

// summary is the decision in a few words, for tables.
func (v decisionView) summary() string {
	switch v.Outcome {
	case decision.OutcomeSkipped:
		return "not constrained: " + v.Skipped
	case decision.OutcomeRejected:
		return "rejected: " + v.Message
	case decision.OutcomeFailedOpen:
		if v.Platforms == "*" {
			return "failed open: no constraint"
		}
		return "failed open: " + v.Platforms + " (fallbackPlatforms)"
	case decision.OutcomeUnconstrained:
		return "no constraint: the images run on any platform"
	}
	return v.Platforms + " (from " + v.Source + ")"
}

// printDecidedWith says, after a table, which configuration and how many
// policies the decisions were taken with, and what kept them from being the
// cluster's.
func printDecidedWith(w io.Writer, dc *decider, filePolicies int) {
	msg := "info: decided with " + orNone(dc.config)
	if filePolicies > 0 {
		msg += fmt.Sprintf(" and the %d ArchFilterPolicy objects among the files", filePolicies)
	}
	writeLine(w, "%s", msg)
	for _, n := range dc.notes {
		writeLine(w, "warning: %s", n)
	}
}

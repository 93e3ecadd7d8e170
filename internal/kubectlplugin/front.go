package kubectlplugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/placement"
)

// Which of archfilter's front-ends decides for a pod (frontView.By).
const (
	// frontScheduler: the ArchFilter plugin of the scheduler profile the pod names.
	frontScheduler = "scheduler"
	// frontPlacement: the placement mode (its webhook and controller).
	frontPlacement = "placement mode"
	// frontNone: no front-end of archfilter decides: the pod names a scheduler
	// without ArchFilter, and no placement mode is installed for it.
	frontNone = "none"
	// frontUnknown: what the cluster shows does not say; How names the flag
	// that tells.
	frontUnknown = "unknown"
)

// placementWebhookName is the webhook the placement mode registers in the
// MutatingWebhookConfiguration it owns (internal/placement/webhook.WebhookName;
// a test keeps them equal).
const placementWebhookName = "placement.archfilter.io"

// archfilterFailedScheduling are the texts ArchFilter puts in the scheduler's
// FailedScheduling message (package decision's Reason* constants and the
// plugin's Filter reason, in its per-platform form and in the aggregated "N
// node(s) didn't match the platforms of the pod's images (linux/riscv64)",
// and "N node(s) didn't satisfy plugin(s) [ArchFilter]"; a test keeps them in
// step with the plugin's).
var archfilterFailedScheduling = []string{
	decision.ReasonNoCommonPlatform, decision.ReasonOwnConstraintConflict, decision.ReasonResolutionFailed,
	decision.ReasonInvalidAnnotation, decision.ReasonNotAllowedByPolicy,
	"didn't match the platforms of the pod's images",
	"waiting for the platforms of the pod's images to be resolved",
	// The scheduler's words for the nodes ArchFilter's PreFilter left out.
	"plugin(s) [ArchFilter]",
}

// pluginEventReasons are the reasons only the ArchFilter plugin records on
// pods (pkg/plugins/archfilter/events.go, daemonset.go).
var pluginEventReasons = []string{
	"ResolvingImagePlatforms", "ImagePlatformsResolved", "ImagePlatformResolutionFailed",
	"ArchFilterFailOpen", "InvalidPlatformPreference", "InvalidArchFilterAnnotation",
	"DaemonSetPodPlatformMismatch",
}

// placementEventReasons are the reasons the placement mode records on pods
// (internal/placement/controller).
var placementEventReasons = []string{
	"ArchFilterPlacement", "ArchFilterPlacementFailedOpen", "ArchFilterPlacementRejected",
	"ArchFilterPlacementUnmergeable", "ArchFilterPlacementGateRemoved",
}

// frontView is which front-end decides for a pod, and how that is known.
type frontView struct {
	// By is scheduler, placement mode, none or unknown.
	By string `json:"by"`
	// Scheduler is the pod's spec.schedulerName.
	Scheduler string `json:"scheduler"`
	// How says how it is known; for unknown, what could not be read and
	// which flag tells.
	How string `json:"how"`
}

// known reports whether the cluster (or a flag) said who decides.
func (f frontView) known() bool { return f.By != frontUnknown }

// String is the front-end for people: "the ArchFilter plugin of scheduler
// default-scheduler", "the placement mode", "no front-end of archfilter".
func (f frontView) String() string {
	switch f.By {
	case frontScheduler:
		return "the ArchFilter plugin of scheduler " + f.Scheduler
	case frontPlacement:
		return "the placement mode"
	case frontNone:
		return "no front-end of archfilter"
	}
	return "not known"
}

// frontEnds is what the cluster says about archfilter's front-ends, read once
// per command: the scheduler profiles that run ArchFilter in the deployed
// configuration, the placement mode's webhook, the events schedulers recorded.
type frontEnds struct {
	// flagged are --scheduler-name's values when the flag was given: the
	// person says which schedulers run ArchFilter.
	flagged []string
	// profiles maps the scheduler name of each profile that runs ArchFilter to
	// the configuration that says so; others, the names of the profiles that do not.
	profiles, others map[string]string
	// configs names the scheduler configurations read.
	configs []string
	// configProblem says why the deployed configuration could not be read.
	configProblem string
	// webhook names the placement mode's MutatingWebhookConfiguration ("" when
	// none is installed); webhookSelector is its namespaceSelector (nil: every
	// namespace); webhookProblem says why it could not be read.
	webhook         string
	webhookSelector labels.Selector
	webhookProblem  string
	// seen maps a scheduler name to an event that shows it runs ArchFilter.
	seen       map[string]string
	namespaces decision.NamespaceLabels
}

// findFrontEnds reads the deployed scheduler configurations (ConfigLabel
// "scheduler") and the MutatingWebhookConfigurations. What cannot be read
// (RBAC) is recorded, not an error: the answers say it is not known.
func findFrontEnds(ctx context.Context, client kubernetes.Interface, dec *decisionFlags, namespaces decision.NamespaceLabels) *frontEnds {
	fe := &frontEnds{profiles: map[string]string{}, others: map[string]string{}, seen: map[string]string{}, namespaces: namespaces}
	if dec != nil && dec.cmd != nil && dec.cmd.Flags().Changed("scheduler-name") {
		fe.flagged = dec.schedulers
	}
	profiles, err := schedulerProfiles(ctx, client)
	if err != nil {
		fe.configProblem = "the deployed configuration could not be read (" + err.Error() + ")"
	}
	for _, p := range profiles {
		if !slices.Contains(fe.configs, p.source) {
			fe.configs = append(fe.configs, p.source)
		}
		into := fe.others
		if p.runsArchFilter {
			into = fe.profiles
		}
		if _, dup := into[p.name]; !dup {
			into[p.name] = p.source
		}
	}
	hooks, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		fe.webhookProblem = "the placement mode's MutatingWebhookConfiguration could not be read (" + err.Error() + ")"
		return fe
	}
	for _, cfg := range hooks.Items {
		for _, wh := range cfg.Webhooks {
			if wh.Name != placementWebhookName {
				continue
			}
			fe.webhook = "MutatingWebhookConfiguration " + cfg.Name
			if wh.NamespaceSelector != nil {
				if sel, err := metav1.LabelSelectorAsSelector(wh.NamespaceSelector); err == nil {
					fe.webhookSelector = sel
				}
			}
			return fe
		}
	}
	return fe
}

// observe records, from events on pods, the schedulers whose ArchFilter
// plugin recorded something: an event only ArchFilter records, or a
// FailedScheduling that carries one of its reasons, reported by the scheduler
// (its profile's name).
func (fe *frontEnds) observe(events []v1.Event) {
	for i := range events {
		e := &events[i]
		by := reporter(e)
		if by == "" {
			continue
		}
		if _, ok := fe.seen[by]; ok {
			continue
		}
		if what, ok := archfilterEvent(e); ok {
			fe.seen[by] = fmt.Sprintf("scheduler %s recorded %s on pod %s/%s", by, what, e.InvolvedObject.Namespace, e.InvolvedObject.Name)
		}
	}
}

// archfilterEvent says which of the ArchFilter plugin's events e is.
func archfilterEvent(e *v1.Event) (string, bool) {
	if slices.Contains(pluginEventReasons, e.Reason) {
		return "ArchFilter's event " + e.Reason, true
	}
	if e.Reason == "FailedScheduling" {
		for _, s := range archfilterFailedScheduling {
			if strings.Contains(e.Message, s) {
				return "ArchFilter's reason in its FailedScheduling", true
			}
		}
	}
	return "", false
}

// of says which front-end decides for pod and how that is known, from (in this
// order) --scheduler-name, the placement mode's marks on the pod (its
// decision record, its scheduling gate, its events), the deployed scheduler
// configuration, the schedulers' events, and the placement mode's webhook.
// events are the pod's own (nil when not read). why and report both ask it.
func (fe *frontEnds) of(pod *v1.Pod, events []v1.Event) frontView {
	name := pod.Spec.SchedulerName
	if name == "" {
		name = v1.DefaultSchedulerName
	}
	f := frontView{Scheduler: name}
	if slices.Contains(fe.flagged, name) {
		f.By, f.How = frontScheduler, "--scheduler-name names "+name
		return f
	}
	if mark := placementMark(pod, events); mark != "" {
		f.By, f.How = frontPlacement, mark
		return f
	}
	if source, ok := fe.profiles[name]; ok {
		f.By, f.How = frontScheduler, fmt.Sprintf("ArchFilter runs in profile %s of %s", name, source)
		return f
	}
	for i := range events {
		if what, ok := archfilterEvent(&events[i]); ok && reporter(&events[i]) == name {
			f.By, f.How = frontScheduler, fmt.Sprintf("scheduler %s recorded %s on the pod", name, what)
			return f
		}
	}
	if how, ok := fe.seen[name]; ok {
		f.By, f.How = frontScheduler, how
		return f
	}
	without, basis := fe.runsNoArchFilter(name)
	placementHow, placementKnown, installed := fe.placementFor(pod.Namespace)
	switch {
	case installed && without:
		f.By, f.How = frontPlacement, fmt.Sprintf("%s; scheduler %s runs no ArchFilter profile (%s)", placementHow, name, basis)
	case !installed && placementKnown && without:
		f.By, f.How = frontNone, fmt.Sprintf("scheduler %s runs no ArchFilter profile (%s), and %s", name, basis, placementHow)
	case without:
		f.By, f.How = frontUnknown, fmt.Sprintf("scheduler %s runs no ArchFilter profile (%s); whether the placement mode decides is not known: %s", name, basis, placementHow)
	default:
		f.By = frontUnknown
		f.How = fmt.Sprintf("whether scheduler %s runs ArchFilter is not known (%s); %s; if a profile of scheduler %s runs ArchFilter, say so with --scheduler-name %s (--args FILE gives its ArchFilterArgs)",
			name, basis, placementHow, name, name)
	}
	return f
}

// runsNoArchFilter reports whether the scheduler called name is known to run
// no ArchFilter profile, and on what basis (or why it is not known).
func (fe *frontEnds) runsNoArchFilter(name string) (bool, string) {
	switch {
	case len(fe.flagged) > 0:
		return true, "--scheduler-name names " + strings.Join(fe.flagged, ", ")
	case fe.others[name] != "":
		return true, fmt.Sprintf("its profile in %s does not enable ArchFilter", fe.others[name])
	case len(fe.configs) > 0 && len(fe.profiles) == 0:
		return true, fmt.Sprintf("%s enables ArchFilter in no profile", strings.Join(fe.configs, ", "))
	case len(fe.configs) > 0:
		return true, fmt.Sprintf("%s names the profiles that run ArchFilter: %s", strings.Join(fe.configs, ", "), strings.Join(sets.List(sets.KeySet(fe.profiles)), ", "))
	case fe.configProblem != "":
		return false, fe.configProblem
	}
	return false, fmt.Sprintf("no ConfigMap labelled %s=%s in the cluster", ConfigLabel, ConfigLabelScheduler)
}

// placementFor says whether the placement mode is installed for pods of
// namespace (its webhook exists and selects the namespace), whether that is
// known, and how.
func (fe *frontEnds) placementFor(namespace string) (how string, known, installed bool) {
	switch {
	case fe.webhookProblem != "":
		return fe.webhookProblem, false, false
	case fe.webhook == "":
		return fmt.Sprintf("no placement mode is installed (no MutatingWebhookConfiguration has the webhook %s)", placementWebhookName), true, false
	}
	if fe.webhookSelector != nil && fe.namespaces != nil && namespace != "" {
		if lbls, ok := fe.namespaces(namespace); ok && !fe.webhookSelector.Matches(lbls) {
			return fmt.Sprintf("the placement mode's %s does not select namespace %s", fe.webhook, namespace), true, false
		}
	}
	return fmt.Sprintf("the placement mode's %s is installed", fe.webhook), true, true
}

// placementMark is what on the pod shows that the placement mode decided for
// it ("" when nothing does): its decision record, its scheduling gate, its events.
func placementMark(pod *v1.Pod, events []v1.Event) string {
	if _, ok := pod.Annotations[annotations.Decision]; ok {
		return "the pod carries the placement mode's decision (annotation " + annotations.Decision + ")"
	}
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == placement.GateName {
			return "the pod carries the placement mode's scheduling gate " + placement.GateName
		}
	}
	for _, e := range events {
		if slices.Contains(placementEventReasons, e.Reason) {
			return "the placement mode recorded its event " + e.Reason + " on the pod"
		}
	}
	return ""
}

// reporter is the component that recorded e: a scheduler records as its
// profile's name.
func reporter(e *v1.Event) string {
	if e.ReportingController != "" {
		return e.ReportingController
	}
	return e.Source.Component
}

// describe says, in a line each, what the cluster showed about the front-ends,
// for report's summary.
func (fe *frontEnds) describe() []string {
	var lines []string
	names := sets.List(sets.KeySet(fe.profiles))
	for _, n := range names {
		lines = append(lines, fmt.Sprintf("ArchFilter runs in profile %s of %s", n, fe.profiles[n]))
	}
	seen := sets.List(sets.KeySet(fe.seen))
	for _, n := range seen {
		if _, ok := fe.profiles[n]; !ok {
			lines = append(lines, fe.seen[n])
		}
	}
	if len(fe.flagged) > 0 {
		lines = append(lines, "--scheduler-name names "+strings.Join(fe.flagged, ", "))
	}
	if fe.configProblem != "" {
		lines = append(lines, fe.configProblem)
	} else if len(fe.configs) == 0 {
		lines = append(lines, fmt.Sprintf("no scheduler configuration found (no ConfigMap labelled %s=%s)", ConfigLabel, ConfigLabelScheduler))
	}
	how, _, _ := fe.placementFor("")
	return append(lines, how)
}

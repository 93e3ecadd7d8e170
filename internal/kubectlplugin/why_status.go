package kubectlplugin

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/misplaced"
	"github.com/archfilter/archfilter/pkg/placement"
	"github.com/archfilter/archfilter/pkg/platform"
)

// Verdicts (verdictView.Kind).
const (
	// verdictRuns: bound to a node where it runs.
	verdictRuns = "runs"
	// verdictCannotRun: bound to a node where it cannot run (what report
	// --running finds on it).
	verdictCannotRun = "cannot-run"
	// verdictPending: not bound; Text says why in one clause.
	verdictPending = "pending"
	// verdictNotArchFilters: archfilter does not decide for it: out of its
	// scope, or a scheduler without ArchFilter and no placement mode.
	verdictNotArchFilters = "not-archfilters"
	// verdictUnknown: where it runs could not be answered.
	verdictUnknown = "unknown"
)

// verdictView is why's answer in one line: its kind and the sentence printed
// last ("Verdict: ...").
type verdictView struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	// code is the exit status (root.go): ExitFailed when the pod is bound where
	// it cannot run or runs nowhere, ExitInputError when that could not be
	// answered, else 0.
	code int
}

// whyStatus is why's exit status, the verdict's. The verdict, printed last,
// says why; no error line repeats it.
func whyStatus(v *whyView) error {
	if v.Verdict.code == 0 {
		return nil
	}
	return &ExitError{Code: v.Verdict.code}
}

// verdictOf is why's verdict on v. bound is what judgeBound found for a bound
// pod (nil for one not bound): the judgement report --running makes, so that
// both flag the same pods.
func verdictOf(v *whyView, bound *misplaced.Report) verdictView {
	if bound != nil {
		return boundVerdict(v, bound)
	}
	pod := v.pod
	unresolved := v.unresolved()
	switch {
	case v.DecidedBy.By == frontNone:
		return verdictView{Kind: verdictNotArchFilters, Text: "not archfilter's: " + v.DecidedBy.How}
	case v.judged.skip != "":
		return verdictView{Kind: verdictNotArchFilters, Text: "not archfilter's: not in its scope (" + string(v.judged.skip) + ")"}
	case len(unresolved) > 0:
		img := unresolved[0]
		if r := v.judged.d.Rejection; r != nil && r.Kind == decision.RejectResolutionFailed {
			return verdictView{Kind: verdictPending, code: ExitInputError,
				Text: fmt.Sprintf("Pending because the platforms of its images could not be resolved (failurePolicy Fail): %s: %s", img.Image, img.Error)}
		}
		return verdictView{Kind: verdictPending, code: ExitInputError,
			Text: fmt.Sprintf("Pending; where it can run is not known: %s could not be resolved: %s", img.Image, img.Error)}
	}
	nowhere := ExitFailed
	switch {
	case v.allowed.IsEmpty():
		return verdictView{Kind: verdictPending, code: nowhere, Text: "Pending because " + noPlatformClause(v)}
	case len(v.Nodes) == 0:
		return verdictView{Kind: verdictPending, Text: "Pending because the cluster has no nodes"}
	}
	var runs, allowed []string
	for _, g := range v.Nodes {
		if g.CanRun {
			runs = append(runs, g.Platform)
			if g.Allowed {
				allowed = append(allowed, g.Platform)
			}
		}
	}
	switch {
	case len(runs) == 0:
		return verdictView{Kind: verdictPending, code: nowhere, Text: fmt.Sprintf("Pending because none of the cluster's nodes runs its images: they run on %s; the nodes are %s",
			setString(v.allowed), nodePlatformList(v.Nodes))}
	case len(allowed) == 0:
		return verdictView{Kind: verdictPending, code: nowhere, Text: fmt.Sprintf("Pending because archfilter's decision (%s) allows none of the nodes that run its images (%s)",
			v.Decision.summary(), strings.Join(runs, ", "))}
	}
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == placement.GateName {
			return verdictView{Kind: verdictPending, Text: "Pending because the placement mode holds it (scheduling gate " + placement.GateName + ") until it has decided where it runs"}
		}
	}
	if gates := len(pod.Spec.SchedulingGates); gates > 0 {
		names := make([]string, gates)
		for i, g := range pod.Spec.SchedulingGates {
			names[i] = g.Name
		}
		return verdictView{Kind: verdictPending, Text: "Pending because of its scheduling gates, which are not archfilter's: " + strings.Join(names, ", ")}
	}
	if v.failedScheduling != "" {
		return verdictView{Kind: verdictPending, Text: fmt.Sprintf("Pending because the scheduler found no node for it, though its images run on %s: %s",
			strings.Join(allowed, ", "), schedulingClause(v.failedScheduling))}
	}
	return verdictView{Kind: verdictPending, Text: fmt.Sprintf("Pending, and no FailedScheduling event says why: its images run on %s; is scheduler %s running? (events expire after an hour)",
		strings.Join(allowed, ", "), v.DecidedBy.Scheduler)}
}

// boundVerdict is the verdict on a bound pod, from what report --running finds.
func boundVerdict(v *whyView, bound *misplaced.Report) verdictView {
	where := "node " + v.pod.Spec.NodeName
	np, npKnown := platform.FromNode(v.node)
	if npKnown {
		where += " (" + np.String() + ")"
	}
	switch {
	case len(v.Running) > 0:
		code := ExitFailed
		if len(v.RunningErrors) > 0 {
			code = ExitInputError
		}
		text := fmt.Sprintf("bound to %s, where it cannot run: %s", where, v.Running[0].Evidence)
		switch n := len(v.Running); {
		case n == 2:
			text += " (and 1 more finding, above)"
		case n > 2:
			text += fmt.Sprintf(" (and %d more findings, above)", n-1)
		}
		return verdictView{Kind: verdictCannotRun, Text: text, code: code}
	case v.node == nil:
		return verdictView{Kind: verdictUnknown, code: ExitInputError,
			Text: fmt.Sprintf("bound to node %s, which the cluster does not list: whether it can run there is not known", v.pod.Spec.NodeName)}
	case !npKnown:
		return verdictView{Kind: verdictUnknown, code: ExitInputError,
			Text: fmt.Sprintf("bound to node %s, whose platform is not known (it has no %s and %s labels)", v.pod.Spec.NodeName, v1.LabelOSStable, v1.LabelArchStable)}
	case len(v.RunningErrors) > 0 || len(bound.Unresolved) > 0:
		img := ""
		if len(bound.Unresolved) > 0 {
			img = bound.Unresolved[0] + " "
		}
		return verdictView{Kind: verdictUnknown, code: ExitInputError,
			Text: fmt.Sprintf("bound to %s; whether it can run there is not known: %scould not be resolved", where, img)}
	case bound.Skip != "" && !bound.Skip.ReadsImages():
		return verdictView{Kind: verdictNotArchFilters, Text: fmt.Sprintf("not archfilter's: not in its scope (%s); bound to %s, not checked", bound.Skip, where)}
	case decision.Declared(v.pod):
		return verdictView{Kind: verdictRuns, Text: fmt.Sprintf("bound to %s, where it runs (its annotation %s allows it)", where, annotations.Platforms)}
	}
	return verdictView{Kind: verdictRuns, Text: fmt.Sprintf("bound to %s, where its images run", where)}
}

// noPlatformClause says why no platform is left for the pod.
func noPlatformClause(v *whyView) string {
	r := v.judged.d.Rejection
	switch {
	case r != nil && r.Kind == decision.RejectNoCommonPlatform && v.Blocking != "":
		return "its images share no platform: " + v.Blocking
	case r != nil:
		return r.Message
	case v.Blocking != "":
		return "no platform is left: " + v.Blocking
	}
	return "no platform is left"
}

// schedulingClause is a FailedScheduling message without the preemption's
// part: "0/3 nodes are available: 1 node(s) didn't match the platforms of the
// pod's images (linux/riscv64), 2 Insufficient cpu". The message is not
// parsed further, so ArchFilter's reason reads the same in its aggregated form
// and in the per-platform one before it.
func schedulingClause(msg string) string {
	if i := strings.Index(msg, " preemption:"); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSuffix(strings.TrimSpace(msg), ".")
}

// nodePlatformList is "linux/amd64 (1), linux/arm64 (2)".
func nodePlatformList(groups []nodeGroup) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprintf("%s (%d)", g.Platform, g.Nodes)
	}
	return strings.Join(parts, ", ")
}

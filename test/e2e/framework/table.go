package framework

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/decision"
)

// Row is one pod's line in the placement table.
type Row struct {
	Pod            string
	Image          string
	ImagePlatforms string   // what the registry says (the fixture's platforms), as pkg/platform prints them
	ArchFilter     string   // what archfilter decided, in short, from what the cluster records (Decided)
	Notes          []string // ... and the records it was read from, in full
	Node           string
	NodePlatform   string
	Verdict        string // ok, WRONG (node cannot run the image), or unschedulable/pending
	Reason         string // FailedScheduling message, for pods without a node
	ScheduledBy    string
}

// Deciders says which front-end decides for the pods of a table, so that a pod
// without a record of archfilter's can be told apart from one archfilter was
// never asked about.
type Deciders struct {
	// Schedulers are the scheduler names whose profiles run ArchFilter. Empty:
	// not known, and the table says only who scheduled a pod.
	Schedulers []string
	// Settings judge the scope of a pod archfilter recorded nothing about (its
	// archfilter.io/skip annotation, excluded namespaces, ...); nil judges the
	// scheduler name and the annotation only.
	Settings *decision.Settings
	// Namespaces answers Settings' namespaceSelector, when it has one.
	Namespaces decision.NamespaceLabels
}

// Placement builds the table rows for the pods of ns. images maps a
// workload's app label to its fixture image.
func Placement(ctx context.Context, cs kubernetes.Interface, ns string, images map[string]Image) ([]Row, error) {
	return PlacementWith(ctx, cs, ns, images, Deciders{})
}

// PlacementWith is Placement with the deciders of the pods known.
func PlacementWith(ctx context.Context, cs kubernetes.Interface, ns string, images map[string]Image, d Deciders) ([]Row, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	nodeList, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	nodes := map[string]*v1.Node{}
	for i := range nodeList.Items {
		nodes[nodeList.Items[i].Name] = &nodeList.Items[i]
	}
	var rows []Row
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		events, err := PodEvents(ctx, cs, p)
		if err != nil {
			return nil, err
		}
		im := images[p.Labels[LabelApp]]
		var refs []string
		for _, c := range p.Spec.Containers {
			refs = append(refs, c.Image)
		}
		r := Row{
			Pod:            p.Name,
			Image:          shortRef(strings.Join(refs, ",")),
			ImagePlatforms: "-",
			Node:           "-",
			NodePlatform:   "-",
			ScheduledBy:    ScheduledBy(events),
		}
		if len(im.Platforms) > 0 {
			r.ImagePlatforms = im.PlatformSet().String()
		}
		r.ArchFilter, r.Notes = Decided(p, events, d)
		switch StateOf(p) {
		case PodScheduled:
			r.Node = p.Spec.NodeName
			if n := nodes[p.Spec.NodeName]; n != nil {
				r.NodePlatform = NodePlatform(n)
				r.Verdict = "ok"
				if len(im.Platforms) > 0 && !im.RunsOn(n) {
					r.Verdict = "WRONG"
				}
			}
		case PodUnschedulable:
			r.Verdict = "unschedulable"
			r.Reason = LastFailedScheduling(events)
		default:
			r.Verdict = "pending"
			r.Reason = LastFailedScheduling(events)
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Pod < rows[j].Pod })
	return rows, nil
}

// Event reasons Decided reads: ArchFilter's (pkg/plugins/archfilter, events.go
// and daemonset.go), the placement mode's (internal/placement/controller) and
// the scheduler's own. A test keeps them equal to the constants there.
const (
	reasonResolving         = "ResolvingImagePlatforms"
	reasonResolved          = "ImagePlatformsResolved"
	reasonResolutionFailed  = "ImagePlatformResolutionFailed"
	reasonFailOpen          = "ArchFilterFailOpen"
	reasonInvalidPreference = "InvalidPlatformPreference"
	reasonInvalidAnnotation = "InvalidArchFilterAnnotation"
	reasonDaemonSetMismatch = "DaemonSetPodPlatformMismatch"
	reasonPlaced            = "ArchFilterPlacement"
	reasonPlacementFailed   = "ArchFilterPlacementFailedOpen"
	reasonPlacementRejected = "ArchFilterPlacementRejected"
	reasonPlacementUnmerged = "ArchFilterPlacementUnmergeable"
	reasonPlacementGateGone = "ArchFilterPlacementGateRemoved"
	reasonFailedScheduling  = "FailedScheduling"
	reasonScheduled         = "Scheduled"
)

const (
	// platformReasonSubstring is in every reason ArchFilter's PreFilter and
	// Filter give (and in no upstream plugin's): a FailedScheduling message
	// with it is a refusal by platform, in the aggregated form or any other.
	platformReasonSubstring  = "platform"
	eventTTLNote             = "events expire after the API server's --event-ttl (1h by default)"
	noArchFilterEventSummary = "no ArchFilter event"
)

// placementEvents are the placement mode's reasons, with a cell's words for each.
var placementEvents = []struct{ reason, short string }{
	{reasonPlacementRejected, "rejected"},
	{reasonPlacementFailed, "failed open"},
	{reasonPlacementUnmerged, "not applied"},
	{reasonPlaced, "placed"},
	{reasonPlacementGateGone, "gate removed"},
}

// Decided says what archfilter decided about p, from what the cluster records
// and nothing else: the placement mode's decision record (annotation
// archfilter.io/decision), else the events on the pod (ArchFilter's own, then
// the scheduler's FailedScheduling and Scheduled), else why there is none (the
// pod is not in archfilter's scope, or nothing was recorded yet). short is for
// a table cell; notes are the records it read, in full, for a reader to check.
//
// The scheduler writes no decision record (docs/design.md, Alternatives
// considered, says why): the cell of a pod it bound without an ArchFilter
// event says that its profile runs ArchFilter and let the node pass, which is
// all the cluster records.
func Decided(p *v1.Pod, events []v1.Event, d Deciders) (short string, notes []string) {
	if rec, ok, err := decision.RecordOf(p); ok {
		if err != nil {
			return "record unreadable", []string{err.Error()}
		}
		return recordCell(rec)
	}
	// The newest event of each reason ArchFilter or the scheduler records.
	latest := map[string]*v1.Event{}
	for i := range events {
		latest[events[i].Reason] = &events[i]
	}
	note := func(reason string) {
		if e := latest[reason]; e != nil {
			notes = append(notes, reason+": "+e.Message)
		}
	}
	var prefix string
	if latest[reasonInvalidAnnotation] != nil || latest[reasonInvalidPreference] != nil {
		prefix = "bad annotation; "
		note(reasonInvalidAnnotation)
		note(reasonInvalidPreference)
	}
	for _, pe := range placementEvents {
		if latest[pe.reason] != nil {
			// The placement mode decided, but its record is missing (the
			// write failed, or it was removed).
			note(pe.reason)
			return prefix + "placement: " + pe.short + " (no record)", notes
		}
	}
	allowed := ""
	if e := latest[reasonResolved]; e != nil {
		allowed = shortNote(reasonResolved + ": " + e.Message)
		note(reasonResolved)
	}
	bound := p.Spec.NodeName != ""
	switch {
	case latest[reasonResolutionFailed] != nil && !bound:
		note(reasonResolutionFailed)
		note(reasonFailedScheduling)
		return prefix + "unresolved, Pending", notes
	case latest[reasonFailOpen] != nil:
		note(reasonFailOpen)
		return prefix + "failed open" + onPlatforms(latest[reasonFailOpen].Message), notes
	case latest[reasonDaemonSetMismatch] != nil:
		note(reasonDaemonSetMismatch)
		return prefix + "DaemonSet pod on wrong platform", notes
	}
	if bound {
		if allowed != "" {
			return prefix + "allowed " + allowed, notes
		}
		return prefix + boundWithoutEvent(p, latest[reasonScheduled], d, &notes), notes
	}
	if fs := latest[reasonFailedScheduling]; fs != nil {
		note(reasonFailedScheduling)
		if !strings.Contains(strings.ToLower(fs.Message), platformReasonSubstring) {
			// Pending for another plugin's reason: ArchFilter did not refuse it.
			if allowed != "" {
				return prefix + "allowed " + allowed + "; Pending", notes
			}
			return prefix + "not the platform; Pending", notes
		}
		if allowed != "" {
			return prefix + "rejected: images run on " + allowed, notes
		}
		return prefix + "rejected for its platform", notes
	}
	if latest[reasonResolving] != nil {
		note(reasonResolving)
		return prefix + "waiting for registries", notes
	}
	if allowed != "" {
		return prefix + "allowed " + allowed + "; not bound yet", notes
	}
	if reason := scopeOf(p, d); reason != "" {
		notes = append(notes, "not in archfilter's scope: "+string(reason))
		return prefix + "not in scope: " + shortSkip(reason), notes
	}
	notes = append(notes, "no decision record and no scheduler event yet ("+eventTTLNote+")")
	return prefix + "nothing recorded yet", notes
}

// boundWithoutEvent is the cell of a bound pod with no ArchFilter event: what
// its Scheduled event and the deciders say.
func boundWithoutEvent(p *v1.Pod, scheduled *v1.Event, d Deciders, notes *[]string) string {
	if reason := scopeOf(p, d); reason != "" {
		*notes = append(*notes, "not in archfilter's scope: "+string(reason))
		return "not in scope: " + shortSkip(reason)
	}
	if scheduled == nil {
		*notes = append(*notes, "bound, with no decision record and no Scheduled event ("+eventTTLNote+")")
		return "bound; nothing recorded"
	}
	by := EventSource(*scheduled)
	if len(d.Schedulers) == 0 {
		*notes = append(*notes, fmt.Sprintf("scheduled by %s, which may or may not run ArchFilter: %s on the pod", by, noArchFilterEventSummary))
		return "by " + by + "; " + noArchFilterEventSummary
	}
	if !slices.Contains(d.Schedulers, by) {
		// The pod names an ArchFilter scheduler but another bound it.
		*notes = append(*notes, fmt.Sprintf("bound by %s, whose profile does not run ArchFilter", by))
		return "bound by " + by + ", not archfilter"
	}
	*notes = append(*notes, fmt.Sprintf("scheduled by %s, whose profile runs ArchFilter: the node passed its Filter (%s on the pod)", by, noArchFilterEventSummary))
	return "node passed ArchFilter"
}

// scopeOf judges whether the scheduler's ArchFilter applies to p, as if p were
// not bound yet.
func scopeOf(p *v1.Pod, d Deciders) decision.SkipReason {
	s := decision.Settings{}
	if d.Settings != nil {
		s = *d.Settings
	}
	if len(d.Schedulers) > 0 {
		s.Schedulers = sets.New(d.Schedulers...)
	}
	unbound := p.DeepCopy()
	unbound.Spec.NodeName = ""
	return s.Scope(unbound, decision.ViaScheduler, d.Namespaces)
}

// shortSkip is a skip reason for a table cell: "other scheduler", "annotation
// archfilter.io/skip".
func shortSkip(r decision.SkipReason) string {
	short, _, _ := strings.Cut(string(r), ":")
	return strings.TrimSpace(short)
}

// recordCell is the cell and note of a placement-mode decision record.
func recordCell(rec decision.Record) (string, []string) {
	short := "placement: " + rec.Outcome
	switch rec.Outcome {
	case decision.OutcomeConstrained, decision.OutcomeFailedOpen:
		if rec.Platforms != "" && rec.Platforms != "*" {
			short += " " + rec.Platforms
		}
	}
	note := fmt.Sprintf("%s (by %s): %s", annotations.Decision, rec.By, rec.Outcome)
	if rec.Platforms != "" {
		note += ", platforms " + rec.Platforms
	}
	if rec.Source != "" {
		note += " from " + string(rec.Source)
	}
	if rec.Policy != "" {
		note += ", policy " + rec.Policy
	}
	if rec.Message != "" {
		note += ": " + rec.Message
	}
	return short, []string{note}
}

// onPlatforms returns " on PLATFORMS" from an ArchFilterFailOpen message
// ("Scheduling on linux/amd64 (failurePolicy Ignore): ..."), else "".
func onPlatforms(msg string) string {
	rest, ok := strings.CutPrefix(msg, "Scheduling on ")
	if !ok {
		return ""
	}
	platforms, _, _ := strings.Cut(rest, " ")
	return " on " + platforms
}

// shortRef drops the registry host: the table is about repositories.
func shortRef(ref string) string {
	if i := strings.Index(ref, "/"); i > 0 && strings.ContainsAny(ref[:i], ".:") {
		return ref[i+1:]
	}
	return ref
}

// PrintTable writes rows as aligned columns, then the reasons of pods that
// have no node.
func PrintTable(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tIMAGE\tIMAGE PLATFORMS (registry)\tARCHFILTER\tNODE\tNODE PLATFORM\tFITS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Pod, r.Image, r.ImagePlatforms, clip(r.ArchFilter, 50), r.Node, r.NodePlatform, r.Verdict)
	}
	tw.Flush()
	// What each ARCHFILTER cell was read from, each distinct note once.
	counts := map[string]int{}
	var order []string
	for _, r := range rows {
		for _, n := range r.Notes {
			if counts[n] == 0 {
				order = append(order, n)
			}
			counts[n]++
		}
	}
	if len(order) > 0 {
		fmt.Fprintln(w, "\nWhat the cluster recorded, which ARCHFILTER is read from (a line each; kubectl archfilter why POD prints a pod's in full):")
		for _, n := range order {
			fmt.Fprintf(w, "  %3d× %s\n", counts[n], clip(n, noteWidth))
		}
	}
	for _, r := range rows {
		if r.Node == "-" {
			reason := r.Reason
			if reason == "" {
				reason = "(no FailedScheduling event yet)"
			}
			fmt.Fprintf(w, "\n%s is %s: %s\n", r.Pod, r.Verdict, reason)
		}
	}
}

// noteWidth bounds a record's line under the table: an ImagePlatformsResolved
// event explains every node platform the pod cannot use, a paragraph each.
const noteWidth = 160

// clip shortens s to n runes, the last an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Summary counts the rows by verdict, and the WRONG ones by the scheduler
// that placed them.
func Summary(rows []Row) (byVerdict, wrongBy map[string]int) {
	byVerdict, wrongBy = map[string]int{}, map[string]int{}
	for _, r := range rows {
		byVerdict[r.Verdict]++
		if r.Verdict == "WRONG" {
			wrongBy[r.ScheduledBy]++
		}
	}
	return byVerdict, wrongBy
}

// shortNote shortens an ArchFilter note for a table cell: "Reason: message" events
// and "key=value" annotations keep the part before ": "; for "Images of … run on
// <platforms>[; on the cluster's other nodes: …]" messages the platforms say it all.
func shortNote(n string) string {
	if i := strings.Index(n, " run on "); i >= 0 {
		platforms, _, _ := strings.Cut(n[i+len(" run on "):], ";")
		return platforms
	}
	if k, _, ok := strings.Cut(n, ": "); ok {
		return k
	}
	return n
}

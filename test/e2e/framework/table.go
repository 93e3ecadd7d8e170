package framework

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Row is one pod's line in the placement table.
type Row struct {
	Pod            string
	Image          string
	ImagePlatforms string   // what the registry says (the fixture's platforms)
	ArchFilter     string   // what the plugin recorded on the pod, in short ("-" if nothing)
	Notes          []string // ... and in full
	Node           string
	NodePlatform   string
	Verdict        string // ok, WRONG (node cannot run the image), or unschedulable/pending
	Reason         string // FailedScheduling message, for pods without a node
	ScheduledBy    string
}

// Placement builds the table rows for the pods of ns. images maps a
// workload's app label to its fixture image.
func Placement(ctx context.Context, cs kubernetes.Interface, ns string, images map[string]Image) ([]Row, error) {
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
			ImagePlatforms: strings.Join(im.PlatformStrings(), ","),
			ArchFilter:     "-",
			Node:           "-",
			NodePlatform:   "-",
			ScheduledBy:    ScheduledBy(events),
		}
		if r.Notes = ArchFilterNotes(p, events); len(r.Notes) > 0 {
			var short []string
			for _, n := range r.Notes {
				short = append(short, shortNote(n))
			}
			r.ArchFilter = strings.Join(short, ",")
		}
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
	// What the plugin said, each distinct note once.
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
		fmt.Fprintln(w, "\nArchFilter events and annotations:")
		for _, n := range order {
			fmt.Fprintf(w, "  %3d× %s\n", counts[n], n)
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

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
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

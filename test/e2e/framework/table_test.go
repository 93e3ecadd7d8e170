package framework

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/internal/placement/controller"
	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// event is an event as kube-scheduler records it through events/v1 and
// Decided reads it through core/v1: the profile's schedulerName is the
// reporting controller. at orders them (seconds after a fixed time).
func event(reason, by, message string, at int) v1.Event {
	return v1.Event{
		Reason:              reason,
		Message:             message,
		ReportingController: by,
		EventTime:           metav1.NewMicroTime(time.Date(2026, 11, 27, 12, 0, at, 0, time.UTC)),
	}
}

func TestDecided(t *testing.T) {
	const (
		af       = "archfilter-scheduler"
		upstream = "default-scheduler"
		mismatch = "0/5 nodes are available: 5 node(s) didn't match the platforms of the pod's images (linux/riscv64). preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
	)
	record := func(r decision.Record) string {
		s, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pod := func() *st.PodWrapper {
		return st.MakePod().Namespace("demo").Name("p").SchedulerName(af).Container("r/x:1")
	}
	scheduled := event(archfilter.EventResolved, af, "Images of the pod run on linux/amd64", 1)
	assigned := event("Scheduled", af, "Successfully assigned demo/p to node-linux-amd64", 2)
	ours := Deciders{Schedulers: []string{af}}
	tests := []struct {
		name      string
		pod       *v1.Pod
		events    []v1.Event
		deciders  Deciders
		want      string
		wantNotes []string
	}{
		{
			name: "the placement mode's record",
			pod: pod().SchedulerName(upstream).Node("n").Annotation(annotations.Decision, record(decision.Record{
				By: "archfilter-placement v1", Outcome: decision.OutcomeConstrained, Platforms: "linux/arm64", Source: decision.SourceImages})).Obj(),
			events:    []v1.Event{event("Scheduled", upstream, "Successfully assigned demo/p to n", 1)},
			deciders:  ours,
			want:      "placement: constrained linux/arm64",
			wantNotes: []string{"archfilter.io/decision (by archfilter-placement v1): constrained, platforms linux/arm64 from images"},
		},
		{
			name: "a rejection recorded by the placement mode",
			pod: pod().SchedulerName(upstream).Annotation(annotations.Decision, record(decision.Record{
				By: "archfilter-placement v1", Outcome: decision.OutcomeRejected, Message: "the pod's images have no platform in common"})).Obj(),
			want:      "placement: rejected",
			wantNotes: []string{"archfilter.io/decision (by archfilter-placement v1): rejected: the pod's images have no platform in common"},
		},
		{
			name:      "a record that does not decode",
			pod:       pod().Annotation(annotations.Decision, "{").Obj(),
			want:      "record unreadable",
			wantNotes: []string{"annotation archfilter.io/decision: unexpected end of JSON input"},
		},
		{
			name:      "the placement mode's event without its record",
			pod:       pod().SchedulerName(upstream).Obj(),
			events:    []v1.Event{event(controller.ReasonRejected, "archfilter-placement", "no node runs linux/riscv64", 1)},
			want:      "placement: rejected (no record)",
			wantNotes: []string{"ArchFilterPlacementRejected: no node runs linux/riscv64"},
		},
		{
			name:      "bound after ArchFilter resolved the images",
			pod:       pod().Node("node-linux-amd64").Obj(),
			events:    []v1.Event{scheduled, assigned},
			deciders:  ours,
			want:      "allowed linux/amd64",
			wantNotes: []string{"ImagePlatformsResolved: Images of the pod run on linux/amd64"},
		},
		{
			name:      "bound by an ArchFilter profile without an ArchFilter event",
			pod:       pod().Node("node-linux-amd64").Obj(),
			events:    []v1.Event{assigned},
			deciders:  ours,
			want:      "node passed ArchFilter",
			wantNotes: []string{"scheduled by archfilter-scheduler, whose profile runs ArchFilter: the node passed its Filter (no ArchFilter event on the pod)"},
		},
		{
			name:      "bound by a scheduler that does not run ArchFilter",
			pod:       pod().SchedulerName(upstream).Node("n").Obj(),
			events:    []v1.Event{event("Scheduled", upstream, "Successfully assigned demo/p to n", 1)},
			deciders:  ours,
			want:      "not in scope: other scheduler",
			wantNotes: []string{"not in archfilter's scope: " + string(decision.SkipOtherScheduler)},
		},
		{
			name:      "bound, the schedulers that run ArchFilter unknown",
			pod:       pod().SchedulerName(upstream).Node("n").Obj(),
			events:    []v1.Event{event("Scheduled", upstream, "Successfully assigned demo/p to n", 1)},
			want:      "by default-scheduler; no ArchFilter event",
			wantNotes: []string{"scheduled by default-scheduler, which may or may not run ArchFilter: no ArchFilter event on the pod"},
		},
		{
			name:      "opted out with archfilter.io/skip",
			pod:       pod().Annotation(annotations.Skip, "true").Node("n").Obj(),
			events:    []v1.Event{assigned},
			deciders:  ours,
			want:      "not in scope: annotation archfilter.io/skip",
			wantNotes: []string{"not in archfilter's scope: annotation archfilter.io/skip"},
		},
		{
			name:      "bound, its events expired",
			pod:       pod().Node("n").Obj(),
			deciders:  ours,
			want:      "bound; nothing recorded",
			wantNotes: []string{"bound, with no decision record and no Scheduled event (events expire after the API server's --event-ttl (1h by default))"},
		},
		{
			name: "rejected for its platform, aggregated reason",
			pod:  pod().Obj(),
			events: []v1.Event{
				event(archfilter.EventResolved, af, "Images of the pod run on linux/riscv64", 1),
				event("FailedScheduling", af, mismatch, 2),
			},
			deciders:  ours,
			want:      "rejected: images run on linux/riscv64",
			wantNotes: []string{"ImagePlatformsResolved: Images of the pod run on linux/riscv64", "FailedScheduling: " + mismatch},
		},
		{
			name:      "rejected for its platform, no ImagePlatformsResolved event",
			pod:       pod().Obj(),
			events:    []v1.Event{event("FailedScheduling", af, "0/5 nodes are available: the pod's images have no platform in common.", 1)},
			want:      "rejected for its platform",
			wantNotes: []string{"FailedScheduling: 0/5 nodes are available: the pod's images have no platform in common."},
		},
		{
			name: "Pending for another plugin's reason",
			pod:  pod().Obj(),
			events: []v1.Event{
				scheduled,
				event("FailedScheduling", af, "0/5 nodes are available: 5 Insufficient cpu.", 2),
			},
			want:      "allowed linux/amd64; Pending",
			wantNotes: []string{"ImagePlatformsResolved: Images of the pod run on linux/amd64", "FailedScheduling: 0/5 nodes are available: 5 Insufficient cpu."},
		},
		{
			name:      "Pending for another plugin's reason, no ArchFilter event",
			pod:       pod().Obj(),
			events:    []v1.Event{event("FailedScheduling", af, "0/5 nodes are available: 5 Insufficient cpu.", 1)},
			want:      "not the platform; Pending",
			wantNotes: []string{"FailedScheduling: 0/5 nodes are available: 5 Insufficient cpu."},
		},
		{
			name:   "images that did not resolve under failurePolicy Fail",
			pod:    pod().Obj(),
			events: []v1.Event{event(archfilter.EventResolutionFailed, af, "r/x:1: 401 Unauthorized", 1)},
			want:   "unresolved, Pending",
			wantNotes: []string{
				"ImagePlatformResolutionFailed: r/x:1: 401 Unauthorized",
			},
		},
		{
			name:      "failed open on the fallback platforms",
			pod:       pod().Node("n").Obj(),
			events:    []v1.Event{event(archfilter.EventFailOpen, af, "Scheduling on linux/amd64 (failurePolicy Ignore): r/x:1 (timeout)", 1), assigned},
			want:      "failed open on linux/amd64",
			wantNotes: []string{"ArchFilterFailOpen: Scheduling on linux/amd64 (failurePolicy Ignore): r/x:1 (timeout)"},
		},
		{
			name: "an annotation ArchFilter could not read",
			pod:  pod().Annotation(annotations.Skip, "yes").Node("n").Obj(),
			events: []v1.Event{
				event(archfilter.EventInvalidAnnotation, af, `annotation archfilter.io/skip: "yes" is not true or false`, 1),
				scheduled, assigned,
			},
			deciders: ours,
			want:     "bad annotation; allowed linux/amd64",
			wantNotes: []string{
				`InvalidArchFilterAnnotation: annotation archfilter.io/skip: "yes" is not true or false`,
				"ImagePlatformsResolved: Images of the pod run on linux/amd64",
			},
		},
		{
			name:      "waiting for a registry",
			pod:       pod().Obj(),
			events:    []v1.Event{event(archfilter.EventResolving, af, "Waiting for registries to report the platforms of r/x:1", 1)},
			want:      "waiting for registries",
			wantNotes: []string{"ResolvingImagePlatforms: Waiting for registries to report the platforms of r/x:1"},
		},
		{
			name:      "not met yet",
			pod:       pod().Obj(),
			deciders:  ours,
			want:      "nothing recorded yet",
			wantNotes: []string{"no decision record and no scheduler event yet (events expire after the API server's --event-ttl (1h by default))"},
		},
		{
			name:      "never met: another scheduler's pod",
			pod:       pod().SchedulerName(upstream).Obj(),
			deciders:  ours,
			want:      "not in scope: other scheduler",
			wantNotes: []string{"not in archfilter's scope: " + string(decision.SkipOtherScheduler)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, notes := Decided(tc.pod, tc.events, tc.deciders)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("cell (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNotes, notes); diff != "" {
				t.Errorf("notes (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestEventReasons keeps the reasons Decided reads equal to those the plugin
// and the placement mode record.
func TestEventReasons(t *testing.T) {
	got := []string{reasonResolving, reasonResolved, reasonResolutionFailed, reasonFailOpen, reasonInvalidPreference,
		reasonInvalidAnnotation, reasonDaemonSetMismatch, reasonPlaced, reasonPlacementFailed, reasonPlacementRejected,
		reasonPlacementUnmerged, reasonPlacementGateGone}
	want := []string{archfilter.EventResolving, archfilter.EventResolved, archfilter.EventResolutionFailed, archfilter.EventFailOpen,
		archfilter.EventInvalidPreference, archfilter.EventInvalidAnnotation, archfilter.EventDaemonSetMismatch,
		controller.ReasonPlaced, controller.ReasonFailedOpen, controller.ReasonRejected, controller.ReasonUnmergeable, controller.ReasonGateRemoved}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event reasons (-want,+got):\n%s", diff)
	}
	// Decided tells ArchFilter's refusals from other plugins' by this word.
	if !strings.Contains(archfilter.ReasonPlatformMismatch, platformReasonSubstring) {
		t.Errorf("ArchFilter's Filter reason %q does not say %q", archfilter.ReasonPlatformMismatch, platformReasonSubstring)
	}
}

func TestPlatformsPrintAsPackagePlatform(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"an index entry linux/arm64/v8", ImageARM64Only.PlatformSet().String(), "linux/arm64"},
		{"a multi-arch index", ImageMultiArch.PlatformSet().String(), "linux/amd64,linux/arm64,linux/ppc64le,linux/s390x"},
		{"a Windows image", ImageWindows.PlatformSet().String(), "windows/amd64"},
		{"a fixture's list", strings.Join(ImagePrivate.PlatformStrings(), ","), "linux/arm64,linux/s390x"},
		{"a Windows fixture's list", strings.Join(ImageWindows.PlatformStrings(), ","), "windows/amd64 (os.version 10.0.17763.7009)"},
		{"a Linux node", NodePlatform(node("linux", "arm64", "")), "linux/arm64"},
		{"a Windows node", NodePlatform(node("windows", "amd64", "10.0.17763")), "windows/amd64 (build 10.0.17763)"},
		{"a node without labels", NodePlatform(&v1.Node{}), "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPrintTable(t *testing.T) {
	note := "scheduled by s, whose profile runs ArchFilter: the node passed its Filter"
	long := "ImagePlatformsResolved: Images of the pod run on linux/riscv64; on the cluster's other nodes: " + strings.Repeat(`container "main" (r/x:1) does not run on linux/amd64; `, 4)
	rows := []Row{
		{Pod: "a-1", Image: "demo/a:v1", ImagePlatforms: "linux/amd64", ArchFilter: "node passed ArchFilter", Notes: []string{note},
			Node: "n", NodePlatform: "linux/amd64", Verdict: "ok"},
		{Pod: "a-2", Image: "demo/a:v1", ImagePlatforms: "linux/amd64", ArchFilter: "node passed ArchFilter", Notes: []string{note},
			Node: "n", NodePlatform: "linux/amd64", Verdict: "ok"},
		{Pod: "r-1", Image: "demo/r:v1", ImagePlatforms: "linux/riscv64", ArchFilter: "rejected: images run on linux/riscv64", Notes: []string{long},
			Node: "-", NodePlatform: "-", Verdict: "unschedulable", Reason: "0/1 nodes are available"},
	}
	var b strings.Builder
	PrintTable(&b, rows)
	for _, want := range []string{
		"POD  IMAGE      IMAGE PLATFORMS (registry)  ARCHFILTER                             NODE  NODE PLATFORM  FITS\n",
		"r-1  demo/r:v1  linux/riscv64               rejected: images run on linux/riscv64  -     -              unschedulable\n",
		"    2× " + note + "\n",
		"    1× " + string([]rune(long)[:noteWidth-1]) + "…\n",
		"r-1 is unschedulable: 0/1 nodes are available\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}

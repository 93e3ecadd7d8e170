package decision

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

func mustSettings(t *testing.T, args *config.ArchFilterArgs) *Settings {
	t.Helper()
	if args.FailurePolicy == "" {
		args.FailurePolicy = config.FailurePolicyIgnore
	}
	if args.DaemonSetPolicy == "" {
		args.DaemonSetPolicy = config.DaemonSetPolicySkip
	}
	s, err := NewSettings(args)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustList(t *testing.T, list string) platform.Set {
	t.Helper()
	s, err := platform.ParseList(list)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type podOpt func(*v1.Pod)

func pod(opts ...podOpt) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "p"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func images(refs ...string) podOpt {
	return func(p *v1.Pod) {
		for _, r := range refs {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: r, Image: r})
		}
	}
}

func annotated(key, value string) podOpt {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[key] = value
	}
}

func daemonSet(p *v1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
}

func TestScope(t *testing.T) {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"archfilter": "on"}}
	namespaces := func(name string) (labels.Set, bool) {
		l, ok := map[string]labels.Set{"shop": {"archfilter": "on"}, "other": {}}[name]
		return l, ok
	}
	for _, tc := range []struct {
		name     string
		args     config.ArchFilterArgs
		pod      *v1.Pod
		front    Front
		schedule []string
		want     SkipReason
	}{
		{name: "in scope", pod: pod()},
		{name: "bound", pod: pod(func(p *v1.Pod) { p.Spec.NodeName = "n" }), want: SkipBound},
		{name: "skip annotation", pod: pod(annotated(annotations.Skip, "true")), want: SkipAnnotation},
		{name: "invalid skip annotation does not skip", pod: pod(annotated(annotations.Skip, "yes"))},
		{name: "excluded namespace", args: config.ArchFilterArgs{ExcludedNamespaces: []string{"shop"}}, pod: pod(), want: SkipExcludedNamespace},
		{name: "DaemonSet under Skip", pod: pod(daemonSet), want: SkipDaemonSet},
		{name: "DaemonSet under Enforce", args: config.ArchFilterArgs{DaemonSetPolicy: config.DaemonSetPolicyEnforce}, pod: pod(daemonSet)},
		{name: "namespace selected", args: config.ArchFilterArgs{NamespaceSelector: selector}, pod: pod()},
		{name: "namespace not selected", args: config.ArchFilterArgs{NamespaceSelector: selector}, pod: pod(func(p *v1.Pod) { p.Namespace = "other" }), want: SkipNamespaceNotSelected},
		{name: "namespace unknown: not constrained on a guess", args: config.ArchFilterArgs{NamespaceSelector: selector}, pod: pod(func(p *v1.Pod) { p.Namespace = "new" }), want: SkipNamespaceNotSelected},
		{name: "an empty selector selects every namespace", args: config.ArchFilterArgs{NamespaceSelector: &metav1.LabelSelector{}}, pod: pod(func(p *v1.Pod) { p.Namespace = "new" })},
		{
			name: "placement leaves ArchFilter's schedulers' pods to the plugin", front: ViaPlacement, schedule: []string{"archfilter-scheduler"},
			pod: pod(func(p *v1.Pod) { p.Spec.SchedulerName = "archfilter-scheduler" }), want: SkipArchFilterScheduler,
		},
		{name: "placement takes other schedulers' pods", front: ViaPlacement, schedule: []string{"archfilter-scheduler"}, pod: pod(func(p *v1.Pod) { p.Spec.SchedulerName = "default-scheduler" })},
		{
			name: "the plugin, told its schedulers, leaves others' pods", front: ViaScheduler, schedule: []string{"archfilter-scheduler"},
			pod: pod(func(p *v1.Pod) { p.Spec.SchedulerName = "default-scheduler" }), want: SkipOtherScheduler,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSettings(t, &tc.args)
			s.Schedulers = sets.New(tc.schedule...)
			if got := s.Scope(tc.pod, tc.front, namespaces); got != tc.want {
				t.Errorf("Scope = %q, want %q", got, tc.want)
			}
		})
	}
	if err := InvalidSkip(pod(annotated(annotations.Skip, "yes"))); err == nil || !strings.Contains(err.Error(), annotations.Skip) {
		t.Errorf("InvalidSkip = %v, want an error naming the annotation", err)
	}
}

// lookup answers from a table: a set, an error, or nothing known.
func lookup(t *testing.T, known map[string]any) Lookup {
	return func(image string) (resolver.Result, bool) {
		switch v := known[image].(type) {
		case string:
			return resolver.Result{Platforms: mustList(t, v)}, true
		case error:
			return resolver.Result{Err: v, Expires: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, true
		}
		return resolver.Result{}, false
	}
}

func TestDecide(t *testing.T) {
	known := map[string]any{
		"multi": "linux/amd64,linux/arm64",
		"amd":   "linux/amd64",
		"arm":   "linux/arm64",
		"armv7": "linux/arm/v7",
		"gone":  errors.New("gone: NotFound"),
	}
	for _, tc := range []struct {
		name       string
		args       config.ArchFilterArgs
		pod        *v1.Pod
		want       string // platforms; "" when rejected
		source     Source
		outcome    string
		rejection  string
		pending    []string
		failed     int
		retryAtSet bool
	}{
		{name: "images intersect", pod: pod(images("multi", "arm")), want: "linux/arm64", source: SourceImages, outcome: OutcomeConstrained},
		{name: "32-bit rule widens", args: config.ArchFilterArgs{Run32BitImagesOn: []string{"arm64"}}, pod: pod(images("armv7", "arm")), want: "linux/arm64", source: SourceImages, outcome: OutcomeConstrained},
		{name: "declared platforms, no lookup", pod: pod(images("unknown"), annotated(annotations.Platforms, "linux/s390x")), want: "linux/s390x", source: SourceAnnotation, outcome: OutcomeConstrained},
		{name: "declared platforms widened by the 32-bit rule", args: config.ArchFilterArgs{Run32BitImagesOn: []string{"arm64"}}, pod: pod(images("unknown"), annotated(annotations.Platforms, "linux/arm/v7")), want: "linux/arm/v7,linux/arm64", source: SourceAnnotation, outcome: OutcomeConstrained},
		{name: "invalid declaration", pod: pod(images("multi"), annotated(annotations.Platforms, "linux/")), source: SourceAnnotation, outcome: OutcomeRejected, rejection: RejectInvalidAnnotation},
		{name: "no common platform", pod: pod(images("amd", "arm")), source: SourceImages, outcome: OutcomeRejected, rejection: RejectNoCommonPlatform},
		{name: "own constraint conflict", pod: pod(images("arm"), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelArchStable: "amd64"} }), source: SourceImages, outcome: OutcomeRejected, rejection: RejectOwnConstraintConflict},
		{name: "own constraint narrows", pod: pod(images("multi"), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelArchStable: "amd64"} }), want: "linux/amd64", source: SourceImages, outcome: OutcomeConstrained},
		{name: "Ignore: failure opens", pod: pod(images("gone")), want: "*", source: SourceImages, outcome: OutcomeFailedOpen, failed: 1},
		{name: "Ignore: pending opens", pod: pod(images("unknown", "arm")), want: "linux/arm64", source: SourceImages, outcome: OutcomeFailedOpen, pending: []string{"unknown"}},
		{name: "Ignore with fallback", args: config.ArchFilterArgs{FallbackPlatforms: []string{"linux/amd64"}}, pod: pod(images("gone", "multi")), want: "linux/amd64", source: SourceImages, outcome: OutcomeFailedOpen, failed: 1},
		{name: "Ignore with a fallback the images exclude", args: config.ArchFilterArgs{FallbackPlatforms: []string{"linux/amd64"}}, pod: pod(images("gone", "arm")), source: SourceImages, outcome: OutcomeRejected, rejection: RejectNoCommonPlatform, failed: 1},
		{name: "Fail: failure rejects, with a retry time", args: config.ArchFilterArgs{FailurePolicy: config.FailurePolicyFail}, pod: pod(images("gone")), source: SourceImages, outcome: OutcomeRejected, rejection: RejectResolutionFailed, failed: 1, retryAtSet: true},
		{name: "any platform", pod: pod(), want: "*", source: SourceImages, outcome: OutcomeUnconstrained},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSettings(t, &tc.args)
			d := s.Decide(tc.pod, lookup(t, known))
			if d.Source != tc.source || d.Outcome() != tc.outcome || len(d.Failed) != tc.failed || !cmp.Equal(tc.pending, d.Pending) || d.RetryAt.IsZero() == tc.retryAtSet {
				t.Errorf("Decide = %+v (outcome %s), want source %q, outcome %s, pending %v, %d failed, retry time %v", d, d.Outcome(), tc.source, tc.outcome, tc.pending, tc.failed, tc.retryAtSet)
			}
			switch {
			case tc.rejection != "":
				if d.Rejection == nil || d.Rejection.Kind != tc.rejection {
					t.Errorf("rejection %+v, want %s", d.Rejection, tc.rejection)
				}
			case d.Rejection != nil:
				t.Errorf("rejected: %+v", d.Rejection)
			case d.Platforms.String() != tc.want:
				t.Errorf("platforms %s, want %s", d.Platforms, tc.want)
			}
		})
	}
}

// TestMessagesNameWhatExcludes: the rejection and exclusion messages a person reads
// name the image, the annotation, the fallback or the pod's own constraints.
func TestMessagesNameWhatExcludes(t *testing.T) {
	known := map[string]any{"multi": "linux/amd64,linux/arm64", "amd": "linux/amd64", "arm": "linux/arm64", "gone": errors.New("gone: NotFound")}
	s := mustSettings(t, &config.ArchFilterArgs{FallbackPlatforms: []string{"linux/arm64"}})
	arm64 := platform.NodePlatform{OS: "linux", Architecture: "arm64"}
	amd64 := platform.NodePlatform{OS: "linux", Architecture: "amd64"}
	win := platform.NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.17763"}

	p := pod(images("multi", "arm", "amd"))
	d := s.Decide(p, lookup(t, known))
	if d.Rejection == nil || !strings.Contains(d.Rejection.Message, `container "amd" (amd) runs on none of linux/arm64`) {
		t.Errorf("no common platform: %+v", d.Rejection)
	}
	p = pod(images("multi", "arm"))
	d = s.Decide(p, lookup(t, known))
	if got := s.Exclusion(p, &d, lookup(t, known), amd64); got != `container "arm" (arm) does not run on linux/amd64` {
		t.Errorf("Exclusion(amd64) = %q", got)
	}
	p = pod(images("multi"), annotated(annotations.Platforms, "linux/arm64"))
	d = s.Decide(p, lookup(t, known))
	if got := s.Exclusion(p, &d, lookup(t, known), win); got != "its annotation archfilter.io/platforms excludes windows/amd64 build 10.0.17763" {
		t.Errorf("Exclusion(declared) = %q", got)
	}
	p = pod(images("gone"))
	d = s.Decide(p, lookup(t, known))
	if got := s.Exclusion(p, &d, lookup(t, known), amd64); got != "fallbackPlatforms exclude linux/amd64 while images are unresolved" {
		t.Errorf("Exclusion(fallback) = %q", got)
	}
	if got := d.Unresolved(); got != "gone: NotFound" {
		t.Errorf("Unresolved = %q", got)
	}
	p = pod(images("multi"), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelArchStable: "arm64"} })
	d = s.Decide(p, lookup(t, known))
	if got := s.Exclusion(p, &d, lookup(t, known), amd64); got != "its own spec.os, nodeSelector or node affinity excludes linux/amd64" {
		t.Errorf("Exclusion(own) = %q", got)
	}
	if !d.Platforms.MatchesNode(arm64) {
		t.Errorf("platforms %s exclude arm64", d.Platforms)
	}
}

func TestPreferred(t *testing.T) {
	s := mustSettings(t, &config.ArchFilterArgs{PreferredPlatforms: []config.PlatformPreference{{Platform: "linux/arm64", Weight: 10}}})
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		want    string
		from    PreferenceSource
		invalid bool
	}{
		{name: "configured", pod: pod(), want: "linux/arm64=10", from: PreferencesArgs},
		{name: "annotation replaces them", pod: pod(annotated(annotations.PreferredPlatforms, "linux/amd64=50, linux/s390x=1")), want: "linux/amd64=50,linux/s390x=1", from: PreferencesAnnotation},
		{name: "invalid weight: ignored, configured ones apply", pod: pod(annotated(annotations.PreferredPlatforms, "linux/amd64=500")), want: "linux/arm64=10", from: PreferencesArgs, invalid: true},
		{name: "invalid platform", pod: pod(annotated(annotations.PreferredPlatforms, "amd64=5")), want: "linux/arm64=10", from: PreferencesArgs, invalid: true},
		{name: "no weight", pod: pod(annotated(annotations.PreferredPlatforms, "linux/amd64")), want: "linux/arm64=10", from: PreferencesArgs, invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefs, from, invalid := s.Preferred(tc.pod)
			if got := PreferencesString(prefs); got != tc.want || from != tc.from || (invalid != nil) != tc.invalid {
				t.Errorf("Preferred = %q from %q (invalid %v), want %q from %q (invalid %v)", got, from, invalid, tc.want, tc.from, tc.invalid)
			}
			if invalid != nil && !strings.Contains(invalid.Error(), annotations.PreferredPlatforms) {
				t.Errorf("the error does not name the annotation: %v", invalid)
			}
		})
	}
	none := mustSettings(t, &config.ArchFilterArgs{})
	if prefs, from, _ := none.Preferred(pod()); prefs != nil || from != PreferencesNone {
		t.Errorf("without preferences: %v from %q", prefs, from)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	rec := Record{By: "archfilter-placement v1", At: metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)), Outcome: OutcomeConstrained,
		Platforms: "linux/arm64", Source: SourceImages, Preferred: "linux/arm64=10 (preferredPlatforms)"}
	value, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := RecordOf(pod(annotated(annotations.Decision, value)))
	if !ok || err != nil {
		t.Fatalf("RecordOf: %v, %v", ok, err)
	}
	if diff := cmp.Diff(rec, got); diff != "" {
		t.Errorf("round trip (-want,+got):\n%s", diff)
	}
	if _, ok, _ := RecordOf(pod()); ok {
		t.Error("a pod without the annotation has a record")
	}
	if _, ok, err := RecordOf(pod(annotated(annotations.Decision, "{"))); !ok || err == nil || !strings.Contains(err.Error(), annotations.Decision) {
		t.Errorf("malformed record: %v, %v; want an error naming the annotation", ok, err)
	}
}

func TestRefuseSchedulerOnly(t *testing.T) {
	if err := RefuseSchedulerOnly(field.NewPath("args"), &config.ArchFilterArgs{}, "the placement mode"); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
	err := RefuseSchedulerOnly(field.NewPath("args"), &config.ArchFilterArgs{ArchTaintToleration: true}, "the placement mode")
	if err == nil || !strings.Contains(err.Error(), "args.archTaintToleration") {
		t.Errorf("archTaintToleration: %v, want an error naming its path", err)
	}
}

func TestNewSettingsNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		args config.ArchFilterArgs
		want string
	}{
		{config.ArchFilterArgs{FallbackPlatforms: []string{"linux/"}}, "fallbackPlatforms"},
		{config.ArchFilterArgs{PreferredPlatforms: []config.PlatformPreference{{Platform: "x", Weight: 1}}}, "preferredPlatforms[0]"},
		{config.ArchFilterArgs{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}}, "namespaceSelector"},
	} {
		if _, err := NewSettings(&tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSettings(%+v) = %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}

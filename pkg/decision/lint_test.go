package decision

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
)

func TestLintAnnotations(t *testing.T) {
	type want struct {
		severity Severity
		kind     FindingKind
		key      string
		// contains are parts of the message.
		contains []string
	}
	tests := []struct {
		name   string
		annots map[string]string
		want   []want
	}{
		{name: "none", annots: nil},
		{name: "others' annotations are not ours", annots: map[string]string{"prometheus.io/scrape": "true", "app.kubernetes.io/name": "web", "kubectl.kubernetes.io/restartedAt": "now"}},
		{name: "valid", annots: map[string]string{
			annotations.Skip: "false", annotations.Platforms: "linux/amd64,linux/arm64", annotations.PreferredPlatforms: "linux/arm64=100,linux/amd64=10",
			annotations.Decision: `{"platforms":"linux/arm64"}`,
		}},
		{name: "every spelling of a boolean the scheduler takes", annots: map[string]string{annotations.Skip: "T"}},
		{
			name:   "misspelt key",
			annots: map[string]string{"archfilter.io/platfroms": "linux/arm64"},
			want: []want{{SeverityWarning, FindingUnknownKey, "archfilter.io/platfroms", []string{
				"annotation archfilter.io/platfroms is not one archfilter reads, so it is ignored", "did you mean archfilter.io/platforms?"}}},
		},
		{
			name:   "misspelt prefix",
			annots: map[string]string{"archfilter.com/skip": "true"},
			want:   []want{{SeverityWarning, FindingUnknownKey, "archfilter.com/skip", []string{"did you mean archfilter.io/skip?"}}},
		},
		{
			name:   "unknown key, nothing near",
			annots: map[string]string{"archfilter.io/mode": "strict"},
			want: []want{{SeverityWarning, FindingUnknownKey, "archfilter.io/mode", []string{
				"archfilter reads archfilter.io/platforms, archfilter.io/skip, archfilter.io/preferred-platforms"}}},
		},
		{
			name:   "skip: yes",
			annots: map[string]string{annotations.Skip: "yes"},
			want: []want{{SeverityWarning, FindingInvalidValue, annotations.Skip, []string{
				`"yes" is not true or false`, "true, True, TRUE, t, T, 1", "false, False, FALSE, f, F, 0", "the pod is not skipped", `did you mean "true"?`}}},
		},
		{
			name:   "skip: off",
			annots: map[string]string{annotations.Skip: "off"},
			want:   []want{{SeverityWarning, FindingInvalidValue, annotations.Skip, []string{`did you mean "false"?`}}},
		},
		{
			name:   "skip: spaces",
			annots: map[string]string{annotations.Skip: " true"},
			want:   []want{{SeverityWarning, FindingInvalidValue, annotations.Skip, []string{`did you mean "true"?`}}},
		},
		{
			name:   "platforms: syntax error, not no common platform",
			annots: map[string]string{annotations.Platforms: "linux/amd64,,arm64"},
			want: []want{{SeverityError, FindingInvalidValue, annotations.Platforms, []string{
				`annotation archfilter.io/platforms "linux/amd64,,arm64": syntax error`, "element 2 is empty", "want os/arch[/variant]", "did you mean linux/amd64,linux/arm64?"}}},
		},
		{
			name:   "platforms: no os",
			annots: map[string]string{annotations.Platforms: "arm64"},
			want:   []want{{SeverityError, FindingInvalidValue, annotations.Platforms, []string{"syntax error", "want os/arch[/variant]; did you mean linux/arm64?"}}},
		},
		{
			name:   "platforms: an architecture no runtime knows",
			annots: map[string]string{annotations.Platforms: "linux/arm46"},
			want: []want{{SeverityError, FindingUnknownPlatform, annotations.Platforms, []string{
				"matches no node, the pod would stay Pending", `no container runtime knows the architecture "arm46"`, "did you mean linux/arm64?"}}},
		},
		{
			name:   "platforms: one of two unknown",
			annots: map[string]string{annotations.Platforms: "linux/amd64,linux/arm46"},
			want:   []want{{SeverityWarning, FindingUnknownPlatform, annotations.Platforms, []string{"part of it matches no node", "did you mean linux/amd64,linux/arm64?"}}},
		},
		{
			name:   "platforms: unknown variant",
			annots: map[string]string{annotations.Platforms: "linux/arm/v9"},
			want:   []want{{SeverityWarning, FindingUnknownPlatform, annotations.Platforms, []string{`arm has no variant "v9"`}}},
		},
		{
			name:   "preferences that do not parse",
			annots: map[string]string{annotations.PreferredPlatforms: "amd64=5"},
			want: []want{{SeverityWarning, FindingInvalidValue, annotations.PreferredPlatforms, []string{
				"is ignored, the configured preferredPlatforms apply", "os/arch[/variant]=WEIGHT (1 to 100)", "did you mean linux/amd64=5?"}}},
		},
		{
			name:   "preference weight out of range",
			annots: map[string]string{annotations.PreferredPlatforms: "linux/arm64=500"},
			want:   []want{{SeverityWarning, FindingInvalidValue, annotations.PreferredPlatforms, []string{"weight must be a whole number from 1 to 100"}}},
		},
		{
			name:   "preference for an architecture no runtime knows",
			annots: map[string]string{annotations.PreferredPlatforms: "linux/arm46=100,linux/amd64=10"},
			want: []want{{SeverityWarning, FindingUnknownPlatform, annotations.PreferredPlatforms, []string{
				`a preference matches no node: "linux/arm46=100": no container runtime knows the architecture "arm46"`, "did you mean linux/arm64=100,linux/amd64=10?"}}},
		},
		{
			name:   "several, sorted by key",
			annots: map[string]string{annotations.Skip: "yes", "archfilter.io/platfroms": "linux/arm64", annotations.Platforms: "linux/arm46"},
			want: []want{
				{SeverityError, FindingUnknownPlatform, annotations.Platforms, nil},
				{SeverityWarning, FindingUnknownKey, "archfilter.io/platfroms", nil},
				{SeverityWarning, FindingInvalidValue, annotations.Skip, nil},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := LintAnnotations(tc.annots)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d findings, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if diff := cmp.Diff([]string{string(w.severity), string(w.kind), w.key}, []string{string(g.Severity), string(g.Kind), g.Annotation}); diff != "" {
					t.Errorf("finding %d: severity, kind, annotation (-want,+got):\n%s", i, diff)
				}
				if !strings.Contains(g.Message, g.Annotation) {
					t.Errorf("finding %d does not name its annotation %s: %s", i, g.Annotation, g.Message)
				}
				for _, c := range w.contains {
					if !strings.Contains(g.Message, c) {
						t.Errorf("finding %d: message lacks %q:\n%s", i, c, g.Message)
					}
				}
			}
		})
	}
}

// TestLintAgreesWithTheRules: what LintAnnotations calls an invalid value is what the
// rules (Scope, DeclaredPlatforms, Preferred) refuse or ignore, so no front-end
// warns about a value its decision accepts, or the reverse.
func TestLintAgreesWithTheRules(t *testing.T) {
	s := mustSettings(t, &config.ArchFilterArgs{})
	for _, tc := range []struct{ key, value string }{
		{annotations.Skip, "yes"}, {annotations.Skip, "true"}, {annotations.Skip, "0"}, {annotations.Skip, ""},
		{annotations.Platforms, "linux/amd64,,arm64"}, {annotations.Platforms, "linux/arm64"}, {annotations.Platforms, "arm64"}, {annotations.Platforms, "*"},
		{annotations.PreferredPlatforms, "linux/arm64=100"}, {annotations.PreferredPlatforms, "amd64=5"}, {annotations.PreferredPlatforms, "linux/arm64=0"},
	} {
		pod := pod(annotated(tc.key, tc.value))
		var ruleRefuses bool
		switch tc.key {
		case annotations.Skip:
			ruleRefuses = InvalidSkip(pod) != nil
		case annotations.Platforms:
			_, _, err := s.DeclaredPlatforms(pod)
			ruleRefuses = err != nil
		case annotations.PreferredPlatforms:
			_, _, invalid := s.Preferred(pod)
			ruleRefuses = invalid != nil
		}
		lintRefuses := false
		for _, f := range LintAnnotations(pod.Annotations) {
			lintRefuses = lintRefuses || f.Kind == FindingInvalidValue
		}
		if lintRefuses != ruleRefuses {
			t.Errorf("%s: %q: the rules refuse it: %v, the lint calls it invalid: %v", tc.key, tc.value, ruleRefuses, lintRefuses)
		}
	}
}

func TestLintWorkloadAnnotations(t *testing.T) {
	got := LintWorkloadAnnotations("Deployment", map[string]string{annotations.Skip: "true", "archfilter.io/platfroms": "linux/arm64", "deployment.kubernetes.io/revision": "3"})
	if len(got) != 2 {
		t.Fatalf("got %d findings, want 2: %+v", len(got), got)
	}
	for _, c := range []string{"archfilter.io/platfroms is on the Deployment's own metadata", "move it to spec.template.metadata.annotations as archfilter.io/platforms"} {
		if !strings.Contains(got[0].Message, c) {
			t.Errorf("message lacks %q: %s", c, got[0].Message)
		}
	}
	if got[1].Kind != FindingWrongObject || got[1].Severity != SeverityWarning || strings.Contains(got[1].Message, " as ") {
		t.Errorf("skip on the Deployment: %+v", got[1])
	}
	if got := LintWorkloadAnnotations("CronJob", map[string]string{annotations.Skip: "true"}); len(got) != 1 || !strings.Contains(got[0].Message, "spec.jobTemplate.spec.template.metadata.annotations") {
		t.Errorf("CronJob: %+v", got)
	}
	if got := LintWorkloadAnnotations("Pod", map[string]string{annotations.Skip: "true"}); got != nil {
		t.Errorf("a Pod's own annotations are its pod's: %+v", got)
	}
}

// BenchmarkLintAnnotations: the plugin lints every pod it enqueues; a pod without
// archfilter.io/ annotations must cost next to nothing.
func BenchmarkLintAnnotations(b *testing.B) {
	others := map[string]string{"prometheus.io/scrape": "true", "app.kubernetes.io/name": "web", "kubectl.kubernetes.io/restartedAt": "now"}
	declared := map[string]string{"prometheus.io/scrape": "true", annotations.Platforms: "linux/amd64,linux/arm64", annotations.Skip: "false"}
	for name, annots := range map[string]map[string]string{"others": others, "declared": declared} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				LintAnnotations(annots)
			}
		})
	}
}

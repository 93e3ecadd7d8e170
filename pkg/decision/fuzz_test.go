package decision

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/internal/fuzzcheck"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// Which of FuzzAnnotations' values the pod carries.
const (
	hasSkip = 1 << iota
	hasPlatforms
	hasPreferred
	hasDecision
)

// workloadKinds are the kinds LintWorkloadAnnotations is asked about, by the two bits
// above the presence bits.
var workloadKinds = []string{"Deployment", "CronJob", "Pod", "StatefulSet"}

// annotationsOf builds the annotation map FuzzAnnotations' arguments describe: the
// archfilter.io/ values present, and others, one "key=value" a line.
func annotationsOf(skip, platforms, preferred, decision, others string, present uint8) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(others, "\n") {
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		m[k] = v
	}
	for _, kv := range []struct {
		bit        uint8
		key, value string
	}{{hasSkip, annotations.Skip, skip}, {hasPlatforms, annotations.Platforms, platforms}, {hasPreferred, annotations.PreferredPlatforms, preferred}, {hasDecision, annotations.Decision, decision}} {
		if present&kv.bit != 0 {
			m[kv.key] = kv.value
		} else {
			delete(m, kv.key)
		}
	}
	return m
}

// annotationLimits bound linting and deciding annotations of input's bytes: 64 bytes per
// byte, 1 KiB more per list element (each ',' and '\n': an element of one byte can be
// a problem, with its description, its suggestion and the list's message) and 1 MiB;
// fuzzcheck.DefaultTime.
func annotationLimits(input []byte) fuzzcheck.Limits {
	elements := uint64(bytes.Count(input, []byte(",")) + bytes.Count(input, []byte("\n")))
	return fuzzcheck.Limits{Alloc: fuzzcheck.PerInputByte(input, 64, fuzzcheck.MiB) + fuzzcheck.KiB*elements}
}

// FuzzAnnotations reads arbitrary archfilter.io/ annotations, as people write them on
// pods and pod templates, through the lint (LintAnnotations, LintWorkloadAnnotations)
// and the rules (Scope, InvalidSkip, DeclaredPlatforms, Decide, Preferred, RecordOf).
// The arguments are the values of archfilter.io/skip, /platforms, /preferred-platforms
// and /decision, other annotations ("key=value" a line, any key, the misspelt
// archfilter.io/ ones included), and a byte whose low bits say which of the four the pod
// carries and next two bits which workload kind the workload lint is asked about.
// Besides "no panic":
//   - linting and deciding one pod stay within annotationLimits: 64 bytes per byte of
//     the annotations, 1 KiB per list element, 1 MiB, fuzzcheck.DefaultTime;
//   - the lint agrees with the rules (TestLintAgreesWithTheRules' promise, for any
//     value): it reports an InvalidValue finding for archfilter.io/platforms exactly when
//     DeclaredPlatforms fails and Decide rejects the pod as InvalidAnnotation, for
//     archfilter.io/skip exactly when InvalidSkip fails (and Scope skips the pod exactly
//     when the value is a true boolean), for archfilter.io/preferred-platforms exactly
//     when Preferred ignores it as invalid;
//   - a declaration that parses and draws no finding names only platforms a runtime
//     knows, and an error-severity UnknownPlatform finding one that names none;
//   - each finding names its annotation, which is a key of the map, at most once, in
//     sorted order; keys far from archfilter.io/ draw none;
//   - the workload lint reports WrongObject warnings only, one per archfilter.io/ (or
//     near) key, and nothing for a Pod;
//   - a decision record that reads is written back (Encode) to the same record.
func FuzzAnnotations(f *testing.F) {
	for _, tc := range []struct {
		skip, platforms, preferred, decision, others string
		present                                      uint8
	}{
		// TestLintAnnotations' pods.
		{others: "prometheus.io/scrape=true\napp.kubernetes.io/name=web\nkubectl.kubernetes.io/restartedAt=now"},
		{skip: "false", platforms: "linux/amd64,linux/arm64", preferred: "linux/arm64=100,linux/amd64=10", decision: `{"platforms":"linux/arm64"}`, present: hasSkip | hasPlatforms | hasPreferred | hasDecision},
		{skip: "T", present: hasSkip},
		{others: "archfilter.io/platfroms=linux/arm64"},
		{others: "archfilter.com/skip=true"},
		{others: "archfilter.io/mode=strict"},
		{skip: "yes", present: hasSkip},
		{skip: "off", present: hasSkip},
		{skip: " true", present: hasSkip},
		{platforms: "linux/amd64,,arm64", present: hasPlatforms},
		{platforms: "arm64", present: hasPlatforms},
		{platforms: "linux/arm46", present: hasPlatforms},
		{platforms: "linux/amd64,linux/arm46", present: hasPlatforms},
		{platforms: "linux/arm/v9", present: hasPlatforms},
		{preferred: "amd64=5", present: hasPreferred},
		{preferred: "linux/arm64=500", present: hasPreferred},
		{preferred: "linux/arm46=100,linux/amd64=10", present: hasPreferred},
		{skip: "yes", platforms: "linux/arm46", others: "archfilter.io/platfroms=linux/arm64", present: hasSkip | hasPlatforms},
		// TestLintAgreesWithTheRules' values.
		{skip: "0", present: hasSkip},
		{skip: "", present: hasSkip},
		{platforms: "*", present: hasPlatforms},
		{preferred: "linux/arm64=0", present: hasPreferred},
		// TestLintWorkloadAnnotations' workloads (the kind in bits 4-5).
		{skip: "true", others: "archfilter.io/platfroms=linux/arm64\ndeployment.kubernetes.io/revision=3", present: hasSkip},
		{skip: "true", present: hasSkip | 1<<4},
		{skip: "true", present: hasSkip | 2<<4},
		// TestDecide's and TestPreferred's declarations, TestRecordRoundTrip's records.
		{platforms: "linux/s390x", present: hasPlatforms},
		{platforms: "linux/arm/v7", present: hasPlatforms},
		{platforms: "linux/", present: hasPlatforms},
		{preferred: "linux/amd64=50, linux/s390x=1", present: hasPreferred},
		{preferred: "linux/amd64", present: hasPreferred},
		{decision: `{"by":"archfilter-placement v1","at":"2026-01-01T12:00:00Z","outcome":"Constrained","platforms":"linux/arm64","source":"images","preferred":"linux/arm64=10 (preferredPlatforms)"}`, present: hasDecision},
		{decision: "{", present: hasDecision},
	} {
		f.Add(tc.skip, tc.platforms, tc.preferred, tc.decision, tc.others, tc.present)
	}
	s, err := NewSettings(&config.ArchFilterArgs{FailurePolicy: config.FailurePolicyIgnore, DaemonSetPolicy: config.DaemonSetPolicySkip,
		Run32BitImagesOn: []string{platform.ARM64RunsARM}, PreferredPlatforms: []config.PlatformPreference{{Platform: "linux/arm64", Weight: 10}}})
	if err != nil {
		f.Fatal(err)
	}
	multi, err := platform.ParseList("linux/amd64,linux/arm64")
	if err != nil {
		f.Fatal(err)
	}
	lookup := func(string) (resolver.Result, bool) { return resolver.Result{Platforms: multi}, true }

	f.Fuzz(func(t *testing.T, skip, platforms, preferred, decision, others string, present uint8) {
		annots := annotationsOf(skip, platforms, preferred, decision, others, present)
		kind := workloadKinds[present>>4&3]
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "multi"}}}}
		pod.Namespace, pod.Name, pod.Annotations = "shop", "p", annots

		var (
			findings, workload []Finding
			scope              SkipReason
			invalidSkip        error
			declaredErr        error
			declared           bool
			d                  Decision
			prefInvalid        error
			rec, recAgain      Record
			recOK              bool
			recErr             error
		)
		input := []byte(skip + platforms + preferred + decision + others)
		fuzzcheck.Within(t, "linting and deciding a pod's annotations", annotationLimits(input), func() {
			findings = LintAnnotations(annots)
			workload = LintWorkloadAnnotations(kind, annots)
			scope = s.Scope(pod, ViaPlacement, nil)
			invalidSkip = InvalidSkip(pod)
			_, declared, declaredErr = s.DeclaredPlatforms(pod)
			d = s.Decide(pod, lookup)
			_, _, prefInvalid = s.Preferred(pod)
			rec, recOK, recErr = RecordOf(pod)
		})

		// The lint's verdict per annotation.
		byKey := map[string]Finding{}
		for i, f := range findings {
			if _, dup := byKey[f.Annotation]; dup {
				t.Errorf("two findings for %q: %+v", f.Annotation, findings)
			}
			byKey[f.Annotation] = f
			if _, ok := annots[f.Annotation]; !ok {
				t.Errorf("finding for %q, which the pod does not carry: %+v", f.Annotation, f)
			}
			if !strings.Contains(f.Message, f.Annotation) {
				t.Errorf("finding does not name its annotation %q: %s", f.Annotation, f.Message)
			}
			if i > 0 && findings[i-1].Annotation > f.Annotation {
				t.Errorf("findings not sorted by annotation: %q before %q", findings[i-1].Annotation, f.Annotation)
			}
			if f.Severity != SeverityError && f.Severity != SeverityWarning {
				t.Errorf("finding of severity %q", f.Severity)
			}
		}
		invalid := func(key string) bool {
			f, ok := byKey[key]
			return ok && f.Kind == FindingInvalidValue
		}
		for key := range annots {
			if _, found := byKey[key]; found && !strings.HasPrefix(key, annotations.Prefix) {
				if _, near := nearPrefix(key); !near {
					t.Errorf("finding for %q, which is far from %s", key, annotations.Prefix)
				}
			}
		}

		// archfilter.io/skip.
		_, hasSkipKey := annots[annotations.Skip]
		if got, want := invalid(annotations.Skip), invalidSkip != nil; got != want {
			t.Errorf("skip %q: the lint calls it invalid: %v, InvalidSkip refuses it: %v (%v)", annots[annotations.Skip], got, want, invalidSkip)
		}
		if invalidSkip != nil && !hasSkipKey {
			t.Errorf("InvalidSkip without the annotation: %v", invalidSkip)
		}
		if parsed, err := annotations.ParseSkip(annots[annotations.Skip]); (scope == SkipAnnotation) != (err == nil && parsed) {
			t.Errorf("skip %q: Scope = %q", annots[annotations.Skip], scope)
		}

		// archfilter.io/platforms.
		value, hasPlatformsKey := annots[annotations.Platforms]
		if declared != hasPlatformsKey {
			t.Errorf("DeclaredPlatforms declared = %v, the pod carries %s: %v", declared, annotations.Platforms, hasPlatformsKey)
		}
		if got, want := invalid(annotations.Platforms), declaredErr != nil; got != want {
			t.Errorf("platforms %q: the lint calls it invalid: %v, DeclaredPlatforms refuses it: %v (%v)", value, got, want, declaredErr)
		}
		if rejected := d.Rejection != nil && d.Rejection.Kind == RejectInvalidAnnotation; rejected != (declaredErr != nil) {
			t.Errorf("platforms %q: Decide rejects it as invalid: %v, DeclaredPlatforms refuses it: %v", value, d.Rejection, declaredErr)
		}
		if hasPlatformsKey != (d.Source == SourceAnnotation) {
			t.Errorf("platforms %q (declared %v): Decide's source is %q", value, hasPlatformsKey, d.Source)
		}
		if hasPlatformsKey && declaredErr == nil {
			set, err := platform.ParseList(value)
			if err != nil {
				t.Fatalf("ParseList(%q) fails where DeclaredPlatforms did not: %v", value, err)
			}
			known := 0
			for _, p := range set.Platforms() {
				if platform.KnownOS(p.OS) && platform.KnownArchitecture(p.Architecture) {
					known++
				}
			}
			f, found := byKey[annotations.Platforms]
			switch {
			case !found && !set.IsAny() && known != len(set.Platforms()):
				t.Errorf("platforms %q name %d platform(s) no runtime knows, and the lint says nothing", value, len(set.Platforms())-known)
			case found && f.Severity == SeverityError && known > 0:
				t.Errorf("platforms %q: the lint says no node matches (%s), yet %d platform(s) are known", value, f.Message, known)
			}
		}

		// archfilter.io/preferred-platforms.
		if got, want := invalid(annotations.PreferredPlatforms), prefInvalid != nil; got != want {
			t.Errorf("preferred %q: the lint calls it invalid: %v, Preferred ignores it: %v (%v)", annots[annotations.PreferredPlatforms], got, want, prefInvalid)
		}

		// The workload's own metadata.
		if kind == "Pod" && workload != nil {
			t.Errorf("a Pod's own annotations drew workload findings: %+v", workload)
		}
		for i, f := range workload {
			if f.Kind != FindingWrongObject || f.Severity != SeverityWarning {
				t.Errorf("workload finding %+v, want a WrongObject warning", f)
			}
			if _, ok := annots[f.Annotation]; !ok {
				t.Errorf("workload finding for %q, which the workload does not carry", f.Annotation)
			}
			if _, near := nearPrefix(f.Annotation); !strings.HasPrefix(f.Annotation, annotations.Prefix) && !near {
				t.Errorf("workload finding for %q, which is far from %s", f.Annotation, annotations.Prefix)
			}
			if i > 0 && workload[i-1].Annotation >= f.Annotation {
				t.Errorf("workload findings not sorted, or twice for one key: %q before %q", workload[i-1].Annotation, f.Annotation)
			}
		}
		if kind != "Pod" {
			for key := range annots {
				_, near := nearPrefix(key)
				if want := strings.HasPrefix(key, annotations.Prefix) || near; want != slices.ContainsFunc(workload, func(f Finding) bool { return f.Annotation == key }) {
					t.Errorf("workload annotation %q (archfilter's or near: %v): findings %+v", key, want, workload)
				}
			}
		}

		// archfilter.io/decision.
		if _, ok := annots[annotations.Decision]; ok != recOK {
			t.Errorf("RecordOf ok = %v, the pod carries %s: %v", recOK, annotations.Decision, ok)
		}
		if recOK && recErr == nil {
			value, err := rec.Encode()
			if err != nil {
				t.Fatalf("a record that reads does not encode: %v", err)
			}
			again := &v1.Pod{}
			again.Annotations = map[string]string{annotations.Decision: value}
			recAgain, _, err = RecordOf(again)
			if err != nil {
				t.Fatalf("the record written back, %s, does not read: %v", value, err)
			}
			if diff := cmp.Diff(rec, recAgain); diff != "" {
				t.Errorf("record round trip through %s (-read,+again):\n%s", value, diff)
			}
		} else if recErr != nil && !strings.Contains(recErr.Error(), annotations.Decision) {
			t.Errorf("a record that does not read: the error does not name the annotation: %v", recErr)
		}
	})
}

// maxAnnotationBytes is the most a pod's annotations may hold, keys and values
// (k8s.io/apimachinery's TotalAnnotationSizeLimitB).
const maxAnnotationBytes = 256 << 10

// TestLintTheLargestAnnotations: the lint and the rules take time and memory linear in
// the annotations, even for the largest a pod may carry: every element of a list is a
// problem (empty, unparsable, unknown), which FuzzAnnotations' small inputs cannot show
// at scale. A list of 256 Ki empty elements took minutes while the suggestion searched
// every problem for each element.
func TestLintTheLargestAnnotations(t *testing.T) {
	s, err := NewSettings(&config.ArchFilterArgs{FailurePolicy: config.FailurePolicyIgnore, DaemonSetPolicy: config.DaemonSetPolicySkip})
	if err != nil {
		t.Fatal(err)
	}
	fill := func(unit string) string { return strings.Repeat(unit, (maxAnnotationBytes-64)/len(unit)) }
	for _, tc := range []struct{ name, key, value string }{
		{"empty elements", annotations.Platforms, fill(",")},
		{"elements without an os", annotations.Platforms, fill("x,")},
		{"unknown architectures", annotations.Platforms, fill("linux/arm46,")},
		{"architectures for os", annotations.Platforms, fill("arm64/linux,")},
		{"one long element", annotations.Platforms, "linux/" + fill("a")},
		{"preferences that do not parse", annotations.PreferredPlatforms, fill("arm64=5,")},
		{"preferences for unknown architectures", annotations.PreferredPlatforms, fill("linux/arm46=5,")},
		{"a long skip", annotations.Skip, fill("y")},
		{"a long unknown key", annotations.Prefix + fill("p"), "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			annots := map[string]string{tc.key: tc.value}
			pod := &v1.Pod{}
			pod.Annotations = annots
			input := []byte(tc.key + tc.value)
			limits := annotationLimits(input)
			// Wall time on a loaded machine: far above the linear cost (under a second of
			// CPU, 6 s measured under load), far below the quadratic one (minutes).
			limits.Time = time.Minute
			fuzzcheck.Within(t, "linting the largest annotations", limits, func() {
				LintAnnotations(annots)
				LintWorkloadAnnotations("Deployment", annots)
				s.DeclaredPlatforms(pod)
				s.Preferred(pod)
			})
		})
	}
}

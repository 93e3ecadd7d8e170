package decision

import (
	"fmt"
	"slices"
	"strings"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/spelling"
)

// Severity says how much a Finding matters.
type Severity string

const (
	// SeverityError: the pod does not run as written. archfilter rejects it (its
	// archfilter.io/platforms does not parse), or no node can match it (it declares only
	// platforms no runtime knows). kubectl archfilter check fails on it.
	SeverityError Severity = "error"
	// SeverityWarning: archfilter ignores the annotation, or part of it (an unknown key,
	// a skip value that is not a boolean, a preference that does not parse), or part of
	// it matches no node.
	SeverityWarning Severity = "warning"
)

// FindingKind says what kind of mistake a Finding is.
type FindingKind string

const (
	// FindingUnknownKey: an archfilter.io/ key archfilter neither reads nor writes.
	FindingUnknownKey FindingKind = "UnknownKey"
	// FindingInvalidValue: a value archfilter cannot read (a skip that is not a
	// boolean, a platform list or preference that does not parse).
	FindingInvalidValue FindingKind = "InvalidValue"
	// FindingUnknownPlatform: a value that parses but names an os, architecture or
	// variant no container runtime knows.
	FindingUnknownPlatform FindingKind = "UnknownPlatform"
	// FindingWrongObject: an archfilter.io/ annotation on a workload's own metadata,
	// where archfilter does not read it, instead of its pod template's.
	FindingWrongObject FindingKind = "WrongObject"
)

// Finding is one mistake in the archfilter.io/ annotations a person wrote.
type Finding struct {
	Severity Severity    `json:"severity"`
	Kind     FindingKind `json:"kind"`
	// Annotation is the key as written.
	Annotation string `json:"annotation"`
	// Message names the annotation and says what is wrong, what archfilter does
	// about it and the fix.
	Message string `json:"message"`
}

func (f Finding) String() string { return f.Message }

// LintAnnotations reviews the archfilter.io/ annotations of a pod, or of a pod
// template, as a person wrote them: keys archfilter does not know (with the nearest it
// does), archfilter.io/skip values the front-ends do not take for a boolean (they
// warn and do not skip the pod), archfilter.io/platforms and
// archfilter.io/preferred-platforms values that do not parse (reported as syntax
// errors, with the form and the list probably meant) or name an os or architecture
// no container runtime knows. It is the one judge of these for every front-end: the
// plugin's InvalidArchFilterAnnotation events, the placement mode's admission
// warnings and kubectl archfilter check. Findings are sorted by annotation; nil when
// there are none. A pod without archfilter.io/ annotations costs no allocation.
func LintAnnotations(annots map[string]string) []Finding {
	var out []Finding
	for key, value := range annots {
		if !strings.HasPrefix(key, annotations.Prefix) {
			if near, ok := nearPrefix(key); ok {
				out = append(out, unknownKey(key, near))
			}
			continue
		}
		switch key {
		case annotations.Skip:
			out = appendFinding(out, lintSkip(value))
		case annotations.Platforms:
			out = appendFinding(out, lintPlatforms(value))
		case annotations.PreferredPlatforms:
			out = appendFinding(out, lintPreferences(value))
		case annotations.Decision:
			// Written by the placement mode; why reads it and says when it does not parse.
		default:
			out = append(out, unknownKey(key, key))
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return strings.Compare(a.Annotation, b.Annotation) })
	return out
}

// LintWorkloadAnnotations reviews the annotations of a workload's own metadata (a
// Deployment's, a CronJob's...): archfilter reads a pod's annotations only, so an
// archfilter.io/ annotation there is ignored, and the finding says where it belongs.
// kind is the workload's kind; a Pod's own annotations are LintAnnotations' to judge.
func LintWorkloadAnnotations(kind string, annots map[string]string) []Finding {
	if kind == "Pod" {
		return nil
	}
	where := "spec.template.metadata.annotations"
	if kind == "CronJob" {
		where = "spec.jobTemplate.spec.template.metadata.annotations"
	}
	var out []Finding
	for key := range annots {
		near, ok := key, strings.HasPrefix(key, annotations.Prefix)
		if !ok {
			near, ok = nearPrefix(key)
		}
		if !ok {
			continue
		}
		msg := fmt.Sprintf("annotation %s is on the %s's own metadata, where archfilter does not read it (it reads pods' annotations): move it to %s", key, kind, where)
		if known, ok := nearestKey(near); ok && known != key {
			msg += " as " + known
		}
		out = append(out, Finding{Severity: SeverityWarning, Kind: FindingWrongObject, Annotation: key, Message: msg})
	}
	slices.SortFunc(out, func(a, b Finding) int { return strings.Compare(a.Annotation, b.Annotation) })
	return out
}

func appendFinding(out []Finding, f *Finding) []Finding {
	if f == nil {
		return out
	}
	return append(out, *f)
}

// userKeys are the annotations people write, as listed in messages.
var userKeys = []string{annotations.Platforms, annotations.Skip, annotations.PreferredPlatforms}

// nearestKey is the known annotation nearest key.
func nearestKey(key string) (string, bool) {
	return spelling.Nearest(key, annotations.Known)
}

// nearPrefix says whether key's prefix is a misspelling of archfilter.io/
// ("archfilter.com/skip", "arch-filter.io/skip"), and returns the key with the
// prefix corrected.
func nearPrefix(key string) (string, bool) {
	prefix, name, ok := strings.Cut(key, "/")
	want := strings.TrimSuffix(annotations.Prefix, "/")
	// Most keys are far from it by their length, or share none of its middle
	// ("prometheus.io"): no distance to compute for them.
	if !ok || len(prefix) < len(want)-2 || len(prefix) > len(want)+2 ||
		!strings.Contains(prefix, "rch") && !strings.Contains(prefix, "ilt") && !strings.Contains(prefix, "fil") {
		return "", false
	}
	if _, near := spelling.Nearest(prefix, []string{want}); !near {
		return "", false
	}
	return annotations.Prefix + name, true
}

// unknownKey is the finding for key, which archfilter does not know; corrected is key
// with its prefix corrected.
func unknownKey(key, corrected string) Finding {
	msg := fmt.Sprintf("annotation %s is not one archfilter reads, so it is ignored", key)
	if known, ok := nearestKey(corrected); ok {
		msg += "; did you mean " + known + "?"
	} else {
		msg += "; archfilter reads " + strings.Join(userKeys, ", ")
	}
	return Finding{Severity: SeverityWarning, Kind: FindingUnknownKey, Annotation: key, Message: msg}
}

// lintSkip judges archfilter.io/skip by the front-ends' own parser.
func lintSkip(value string) *Finding {
	_, err := annotations.ParseSkip(value)
	if err == nil {
		return nil
	}
	msg := err.Error()
	if b := meantBool(value); b != "" {
		msg += fmt.Sprintf("; did you mean %q?", b)
	}
	return &Finding{Severity: SeverityWarning, Kind: FindingInvalidValue, Annotation: annotations.Skip, Message: msg}
}

// meantBool is the boolean a value ParseSkip refuses probably meant: "true" for
// "yes" or "on", the value trimmed when spaces are all that is wrong.
func meantBool(value string) string {
	v := strings.TrimSpace(value)
	if v != value {
		if _, err := annotations.ParseSkip(v); err == nil {
			return v
		}
	}
	switch strings.ToLower(strings.Trim(v, `"'`)) {
	case "yes", "y", "on", "enable", "enabled", "skip", "true":
		return "true"
	case "no", "n", "off", "disable", "disabled", "false":
		return "false"
	}
	return ""
}

// lintPlatforms judges archfilter.io/platforms: the declaration the front-ends read
// with platform.ParseList (a syntax error rejects the pod), and its platforms as a
// runtime knows them (platform.ReviewList).
func lintPlatforms(value string) *Finding {
	problems := platform.ReviewList(value)
	if len(problems) == 0 {
		return nil
	}
	syntax, noNode := false, 0
	for _, p := range problems {
		syntax = syntax || p.Syntax
		if p.MatchesNoNode {
			noNode++
		}
	}
	f := &Finding{Annotation: annotations.Platforms, Severity: SeverityWarning, Kind: FindingUnknownPlatform}
	var consequence string
	switch {
	case syntax:
		f.Severity, f.Kind = SeverityError, FindingInvalidValue
		consequence = "syntax error, the pod is not placed until it parses"
	case noNode == len(strings.Split(value, ",")):
		f.Severity = SeverityError
		consequence = "matches no node, the pod would stay Pending"
	case noNode > 0:
		consequence = "part of it matches no node"
	default:
		consequence = "names a variant no runtime knows"
	}
	f.Message = fmt.Sprintf("annotation %s %q: %s: %s", annotations.Platforms, value, consequence, platform.DescribeProblems(value, problems))
	return f
}

// preferencesForm is the form of archfilter.io/preferred-platforms, with an example.
const preferencesForm = "want os/arch[/variant]=WEIGHT (1 to 100), comma-separated, e.g. linux/arm64=100,linux/amd64=10"

// lintPreferences judges archfilter.io/preferred-platforms: by ParsePreferences, as
// the front-ends read it (they ignore it when it does not parse), then its
// platforms as a runtime knows them.
func lintPreferences(value string) *Finding {
	f := &Finding{Annotation: annotations.PreferredPlatforms, Severity: SeverityWarning}
	fixed, problems := reviewPreferences(value)
	if _, err := ParsePreferences(value); err != nil {
		f.Kind = FindingInvalidValue
		f.Message = fmt.Sprintf("annotation %s %q is ignored, the configured preferredPlatforms apply: %v; %s", annotations.PreferredPlatforms, value, err, preferencesForm)
	} else if len(problems) > 0 {
		f.Kind = FindingUnknownPlatform
		descs := make([]string, len(problems))
		for i, p := range problems {
			descs[i] = fmt.Sprintf("%q: %s", p.Element, p.Describe())
		}
		f.Message = fmt.Sprintf("annotation %s %q: a preference matches no node: %s", annotations.PreferredPlatforms, value, strings.Join(descs, "; "))
	} else {
		return nil
	}
	if fixed != "" && fixed != value {
		f.Message += "; did you mean " + fixed + "?"
	}
	return f
}

// reviewPreferences reviews the platform of each preference ("os/arch=WEIGHT"), and
// returns the value with each suggestion in place ("" when one has none).
func reviewPreferences(value string) (fixed string, problems []platform.Problem) {
	elems := strings.Split(value, ",")
	out := make([]string, 0, len(elems))
	fixable := true
	for _, elem := range elems {
		name, weight, ok := strings.Cut(strings.TrimSpace(elem), "=")
		name = strings.TrimSpace(name)
		ps := platform.ReviewList(name)
		if strings.Contains(name, ",") || name == "" {
			ps = nil // an empty element: ParsePreferences says so
		}
		for i := range ps {
			ps[i].Element = strings.TrimSpace(elem)
		}
		problems = append(problems, ps...)
		switch {
		case !ok:
			fixable = false
		case len(ps) == 0:
			out = append(out, name+"="+strings.TrimSpace(weight))
		case ps[0].Suggestion == "":
			fixable = false
		default:
			out = append(out, ps[0].Suggestion+"="+strings.TrimSpace(weight))
		}
	}
	if !fixable {
		return "", problems
	}
	return strings.Join(out, ","), problems
}

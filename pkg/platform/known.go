package platform

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/archfilter/archfilter/pkg/spelling"
)

// knownOSes and knownArchitectures are the GOOS and GOARCH values Go knows (its
// internal/syslist, Go 1.27). The kubelet writes its runtime.GOOS and runtime.GOARCH
// into a node's kubernetes.io/os and kubernetes.io/arch labels, and container runtimes
// name image platforms by the same values, so a platform outside these lists matches no
// node. The likeliest come first: a suggestion prefers them on a tie.
var (
	knownOSes = []string{
		"linux", "windows", "darwin", "freebsd", "wasip1",
		"aix", "android", "dragonfly", "hurd", "illumos", "ios", "js", "nacl", "netbsd", "openbsd", "plan9", "solaris", "zos",
	}
	knownArchitectures = []string{
		"amd64", "arm64", "arm", "386", "ppc64le", "s390x", "riscv64", "loong64", "mips64le", "wasm",
		"amd64p32", "arm64be", "armbe", "mips", "mips64", "mips64p32", "mips64p32le", "mipsle", "ppc", "ppc64", "riscv", "s390", "sparc", "sparc64",
	}
	// knownVariants are the variants OCI indexes give the architectures that have them,
	// after Normalize (which drops amd64/v1 and arm64/v8, and gives arm a variant).
	// Other architectures' variants are not judged.
	knownVariants = map[string][]string{
		"arm":   {"v7", "v6", "v8", "v5"},
		"arm64": {"", "v8.1", "v8.2", "v8.3", "v8.4", "v8.5", "v8.6", "v8.7", "v8.8", "v8.9", "v9", "v9.1", "v9.2", "v9.3", "v9.4", "v9.5"},
		"amd64": {"", "v2", "v3", "v4"},
	}
)

// KnownOS reports whether os (normalised) is an os a Go toolchain, and so a kubelet
// or a container runtime, knows.
func KnownOS(os string) bool { return slices.Contains(knownOSes, os) }

// KnownArchitecture reports whether arch (normalised) is an architecture a Go
// toolchain, and so a kubelet or a container runtime, knows.
func KnownArchitecture(arch string) bool { return slices.Contains(knownArchitectures, arch) }

// knownVariant reports whether variant is one OCI indexes use for arch; any variant of
// an architecture without a list is.
func knownVariant(arch, variant string) bool {
	vs, ok := knownVariants[arch]
	return !ok || slices.Contains(vs, variant)
}

// Example is the platform the messages of this package give as an example.
const Example = "linux/arm64"

// Problem is what is wrong with one element of a platform list as a person wrote it,
// for messages that name the fix. Parse and ParseList accept any os and architecture
// (a future one needs no archfilter release); ReviewList also says which ones no
// runtime knows, since those match no node.
type Problem struct {
	// Element is the element as written, trimmed; Index is its position, from 1.
	Element string
	Index   int
	// Syntax is true when ParseList refuses the element (Parse does, or it is empty).
	// Otherwise it parses, but names an os, architecture or variant no runtime knows.
	Syntax bool
	// MatchesNoNode is true when no node can match the element: it does not parse, or
	// its os or architecture is unknown (node labels carry no variant, so an unknown
	// variant alone still matches).
	MatchesNoNode bool
	// Detail says what is wrong, without the element.
	Detail string
	// Suggestion is the element as it was probably meant, e.g. "linux/arm64" for
	// "arm64" or "linux/arm46"; "" when nothing known is near.
	Suggestion string

	// whole: the element is the whole list, which messages then need not quote twice.
	whole bool
}

// Describe says what is wrong, without the fix: `element 3 "arm64": want
// os/arch[/variant]`, and only the detail when the element is the whole list.
func (p Problem) Describe() string {
	switch {
	case p.Element == "" && !p.whole:
		return fmt.Sprintf("element %d is empty", p.Index)
	case p.whole:
		return p.Detail
	}
	return fmt.Sprintf("element %d %q: %s", p.Index, p.Element, p.Detail)
}

// String is Describe and the fix: the suggestion, else for a syntax error the form
// and an example.
func (p Problem) String() string {
	switch {
	case p.Suggestion != "":
		return p.Describe() + "; did you mean " + p.Suggestion + "?"
	case p.Syntax && strings.Contains(p.Detail, wantForm):
		return p.Describe() + ", e.g. " + Example
	case p.Syntax:
		return p.Describe() + "; " + wantForm + ", e.g. " + Example
	}
	return p.Describe()
}

// wantForm is the form of a platform, as Parse's errors say it.
const wantForm = "want os/arch[/variant]"

// ReviewList returns the problems of the platform list s ("linux/amd64,linux/arm64",
// the form ParseList reads), element by element: none when every element parses and
// names a known os, architecture and variant. ParseList fails exactly when one of
// them has Syntax set. "*" alone has none.
func ReviewList(s string) []Problem {
	if strings.TrimSpace(s) == "*" {
		return nil
	}
	elems := strings.Split(s, ",")
	var out []Problem
	for i, elem := range elems {
		elem = strings.TrimSpace(elem)
		if p, bad := reviewElement(elem); bad {
			if out == nil {
				// Room for every element left: a list of many problems (an annotation
				// of 256 KiB of commas) is not copied over and over as it grows.
				out = make([]Problem, 0, len(elems)-i)
			}
			p.Element, p.Index, p.whole = elem, i+1, len(elems) == 1
			out = append(out, p)
		}
	}
	return out
}

// DescribeList says in one line what is wrong with the platform list s and how to fix
// it: `want os/arch[/variant]; did you mean linux/arm64?` for "arm64", `element 2 is
// empty; element 3 "arm64": want os/arch[/variant]; did you mean
// linux/amd64,linux/arm64?` for "linux/amd64,,arm64"; "" when ReviewList finds
// nothing. A syntax error always names the form, and an example when there is no
// suggestion.
func DescribeList(s string) string {
	return DescribeProblems(s, ReviewList(s))
}

// DescribeProblems is DescribeList for a caller that has ReviewList's problems of s
// already: the list is not reviewed twice.
func DescribeProblems(s string, problems []Problem) string {
	if len(problems) == 0 {
		return ""
	}
	parts := make([]string, 0, len(problems)+2)
	syntax := false
	for _, p := range problems {
		parts = append(parts, p.Describe())
		syntax = syntax || p.Syntax
	}
	fixed, ok := SuggestList(s, problems)
	if syntax && !strings.Contains(strings.Join(parts, ";"), wantForm) {
		form := wantForm + " separated by commas"
		if !ok {
			form += ", e.g. linux/amd64,linux/arm64"
		}
		parts = append(parts, form)
	} else if syntax && !ok {
		parts[len(parts)-1] += ", e.g. " + Example
	}
	if ok {
		parts = append(parts, "did you mean "+fixed+"?")
	}
	return strings.Join(parts, "; ")
}

// SuggestList is the list s with each of its problems' suggestions in place and empty
// elements dropped; ok is false when a problem has no suggestion.
func SuggestList(s string, problems []Problem) (string, bool) {
	elems := strings.Split(s, ",")
	// Each element's first problem, found once: searching problems for each
	// element would take quadratic time, seconds for a list of 80 000 empty
	// elements (a 80 KB annotation value).
	first := make(map[int]int, len(problems))
	for j := len(problems) - 1; j >= 0; j-- {
		first[problems[j].Index] = j
	}
	var out []string
	for i, elem := range elems {
		elem = strings.TrimSpace(elem)
		j, found := first[i+1]
		switch {
		case !found:
			out = append(out, elem)
		case elem == "":
		case problems[j].Suggestion == "":
			return "", false
		default:
			out = append(out, problems[j].Suggestion)
		}
	}
	if len(out) == 0 {
		return "", false
	}
	return strings.Join(out, ","), true
}

// reviewElement reviews one trimmed element of a list; bad is false when it is fine.
func reviewElement(elem string) (p Problem, bad bool) {
	if elem == "" {
		return Problem{Syntax: true, MatchesNoNode: true, Detail: "empty"}, true
	}
	parsed, err := Parse(elem)
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			return Problem{Syntax: true, MatchesNoNode: true, Detail: err.Error()}, true
		}
		return Problem{Syntax: true, MatchesNoNode: true, Detail: pe.Detail, Suggestion: suggestSyntax(elem)}, true
	}
	return reviewKnown(parsed)
}

// reviewKnown says which parts of a parsed platform no runtime knows.
func reviewKnown(p Platform) (Problem, bool) {
	if !KnownOS(p.OS) {
		asArch := Normalize(Platform{Architecture: p.OS}).Architecture
		switch {
		case KnownArchitecture(asArch) && KnownOS(p.Architecture):
			// arm64/linux: the two swapped.
			swapped := Normalize(Platform{OS: p.Architecture, Architecture: p.OS, Variant: p.Variant})
			return Problem{MatchesNoNode: true, Detail: fmt.Sprintf("os %q is an architecture and architecture %q an os", p.OS, p.Architecture), Suggestion: swapped.String()}, true
		case KnownArchitecture(asArch) && p.Variant == "" && strings.HasPrefix(p.Architecture, "v"):
			// arm/v7: an architecture and its variant, without the os.
			return Problem{MatchesNoNode: true, Detail: fmt.Sprintf("%q is an architecture and its variant, %s", p.String(), wantForm),
				Suggestion: Normalize(Platform{OS: "linux", Architecture: p.OS, Variant: p.Architecture}).String()}, true
		}
	}
	var details []string
	fixed, fixable := p, true
	if !KnownOS(p.OS) {
		details = append(details, fmt.Sprintf("no container runtime knows the os %q", p.OS))
		fixed.OS, fixable = nearestOr(p.OS, knownOSes, fixable)
	}
	switch {
	case !KnownArchitecture(p.Architecture):
		details = append(details, fmt.Sprintf("no container runtime knows the architecture %q", p.Architecture))
		fixed.Architecture, fixable = nearestOr(p.Architecture, knownArchitectures, fixable)
		if !knownVariant(fixed.Architecture, fixed.Variant) {
			fixed.Variant = ""
		}
	case !knownVariant(p.Architecture, p.Variant):
		// Node labels carry no variant: the suggestion drops it.
		details = append(details, fmt.Sprintf("%s has no variant %q (known: %s)", p.Architecture, p.Variant, strings.Join(nonEmpty(knownVariants[p.Architecture]), ", ")))
		fixed.Variant = ""
	}
	if len(details) == 0 {
		return Problem{}, false
	}
	prob := Problem{Detail: strings.Join(details, ", and "), MatchesNoNode: !KnownOS(p.OS) || !KnownArchitecture(p.Architecture)}
	if fixable {
		prob.Suggestion = Normalize(fixed).String()
	}
	return prob, true
}

// nearestOr is the known word nearest w, and whether everything so far has one.
func nearestOr(w string, known []string, fixable bool) (string, bool) {
	n, ok := spelling.Nearest(w, known)
	return n, fixable && ok
}

func nonEmpty(vs []string) []string {
	var out []string
	for _, v := range vs {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// suggestSyntax is what an element Parse refuses probably meant: "linux/arm64" for
// "arm64", "linux-arm64", "linux:arm64", "linux/ arm64" or "arm64/v8"; "linux/amd64,linux/arm64"
// for "linux/amd64;linux/arm64"; "" when nothing known is near.
func suggestSyntax(elem string) string {
	// An architecture alone, or with its variant: the os most images have.
	parts := strings.Split(elem, "/")
	if len(parts) <= 2 {
		arch := Normalize(Platform{Architecture: parts[0]}).Architecture
		if KnownArchitecture(arch) && (len(parts) == 1 || knownVariant(arch, Normalize(Platform{Architecture: arch, Variant: parts[1]}).Variant)) {
			p := Platform{OS: "linux", Architecture: parts[0]}
			if len(parts) == 2 {
				p.Variant = parts[1]
			}
			return Normalize(p).String()
		}
	}
	// Platforms separated by something other than a comma.
	for _, sep := range []string{";", " ", "|"} {
		fields := strings.FieldsFunc(elem, func(r rune) bool { return strings.ContainsRune(sep, r) })
		if len(fields) < 2 {
			continue
		}
		fixed := true
		for i, f := range fields {
			if !allKnown([]string{f}) {
				fields[i] = suggestSyntax(f)
				fixed = fixed && fields[i] != ""
			}
		}
		if fixed {
			return strings.Join(fields, ",")
		}
	}
	// Spaces inside, or os and architecture joined by another character.
	if squeezed := strings.Join(strings.Fields(elem), ""); squeezed != elem && allKnown([]string{squeezed}) {
		return mustParse(squeezed).String()
	}
	for _, sep := range []string{"-", "_", ":", "\\", "."} {
		if os, arch, ok := strings.Cut(elem, sep); ok && !strings.Contains(elem, "/") {
			if c := os + "/" + arch; allKnown([]string{c}) {
				return mustParse(c).String()
			}
		}
	}
	return ""
}

// allKnown reports whether every element parses and names a known platform.
func allKnown(elems []string) bool {
	for _, e := range elems {
		p, err := Parse(e)
		if err != nil {
			return false
		}
		if _, bad := reviewKnown(p); bad {
			return false
		}
	}
	return true
}

func mustParse(s string) Platform {
	p, _ := Parse(s)
	return p
}

package platform

import (
	"fmt"
	"slices"
	"strings"
)

// Platform is one os/architecture[/variant] an image runs on, plus the Windows os.version.
type Platform struct {
	OS           string
	Architecture string
	Variant      string
	// OSVersion is only meaningful for Windows images, e.g. "10.0.17763.1234": process-isolated
	// Windows containers run only on a host of the same major.minor.build.
	OSVersion  string
	OSFeatures []string
}

// partNames name the fields of "os/arch/variant" in Parse's errors.
var partNames = [...]string{"os", "architecture", "variant"}

// Parse parses "os/arch" or "os/arch/variant" and returns the normalised Platform.
//
// An architecture alone is rejected rather than defaulting the OS: an index can mix
// windows/amd64 and linux/amd64, so guessing "linux" would silently admit the wrong image.
// Parse is strict about whitespace; ParseList trims around list elements.
func Parse(s string) (Platform, error) {
	if s == "" {
		return Platform{}, &ParseError{Value: s, Detail: "empty, want os/arch[/variant]"}
	}
	parts := strings.Split(s, "/")
	switch {
	case len(parts) < 2:
		return Platform{}, &ParseError{Value: s, Detail: "want os/arch[/variant]"}
	case len(parts) > 3:
		return Platform{}, &ParseError{Value: s, Detail: fmt.Sprintf("%d '/'-separated parts, want os/arch[/variant]", len(parts))}
	}
	for i, part := range parts {
		if part == "" {
			return Platform{}, &ParseError{Value: s, Detail: "empty " + partNames[i]}
		}
		if j := strings.IndexFunc(part, invalidRune); j >= 0 {
			return Platform{}, &ParseError{Value: s, Detail: fmt.Sprintf("%s %q contains %q, want only letters, digits, '.', '_' and '-'",
				partNames[i], part, []rune(part[j:])[0])}
		}
	}
	p := Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return Normalize(p), nil
}

// ParseError is Parse's error: Detail says what is wrong with Value, for messages that
// quote the value themselves (ReviewList).
type ParseError struct {
	Value  string
	Detail string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid platform %q: %s", e.Value, e.Detail)
}

// invalidRune keeps Parse to the characters OCI platform fields use in practice, so that a
// parsed Platform always prints back as something Parse accepts.
func invalidRune(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	case r == '.', r == '_', r == '-':
		return false
	}
	return true
}

// Normalize maps the spellings found in image indexes and configs to the values the kubelet
// puts in a node's kubernetes.io/os and kubernetes.io/arch labels, following containerd's
// rules so that archfilter agrees with the runtime that will pull the image:
//
//   - everything is lower-cased; "macos" is "darwin";
//   - x86_64, x86-64 and amd64 are amd64, and amd64/v1 (the x86-64 baseline) is amd64;
//   - i386, i486, i586, i686 and x86 are 386;
//   - aarch64 and arm64 are arm64, and arm64/v8 (or 8, v8.0) is plain arm64;
//   - armhf is arm/v7, armel is arm/v6, and arm without a variant is arm/v7;
//   - arm and arm64 variants written as numbers gain a "v" ("7" is "v7", "8" is "v8");
//   - anything else is data: riscv64, loong64, s390x, wasm and future architectures pass
//     through lower-cased, so a new architecture needs no archfilter release.
//
// OSVersion is kept as is; OSFeatures are sorted and de-duplicated so that equal platforms
// compare equal. Normalize never fails and is idempotent.
func Normalize(p Platform) Platform {
	p.OS = strings.ToLower(p.OS)
	if p.OS == "macos" {
		p.OS = "darwin"
	}
	p.Variant = strings.ToLower(p.Variant)

	switch arch := strings.ToLower(p.Architecture); arch {
	case "x86_64", "x86-64", "amd64":
		p.Architecture = "amd64"
		if p.Variant == "v1" {
			p.Variant = ""
		}
	case "i386", "i486", "i586", "i686", "x86":
		p.Architecture = "386"
	case "aarch64", "arm64":
		p.Architecture = "arm64"
		p.Variant = armVariant(p.Variant)
		if p.Variant == "v8" {
			p.Variant = ""
		}
	case "armhf":
		p.Architecture, p.Variant = "arm", "v7"
	case "armel":
		p.Architecture, p.Variant = "arm", "v6"
	case "arm":
		p.Architecture = "arm"
		p.Variant = armVariant(p.Variant)
		if p.Variant == "" {
			p.Variant = "v7"
		}
	default:
		p.Architecture = arch
	}

	p.OSFeatures = normalizeFeatures(p.OSFeatures)
	return p
}

// armVariant gives each ARM variant one spelling ("7" and "v7", "v8.0" and "v8" occur in the
// wild), because Set de-duplicates and orders variants as strings.
func armVariant(v string) string {
	if v != "" && '0' <= v[0] && v[0] <= '9' {
		v = "v" + v
	}
	if major, ok := strings.CutSuffix(v, ".0"); ok && strings.HasPrefix(major, "v") && isDigits(major[1:]) {
		v = major
	}
	return v
}

// normalizeFeatures copies before sorting: the caller's slice may be shared with a decoded
// manifest.
func normalizeFeatures(fs []string) []string {
	if len(fs) == 0 {
		return nil
	}
	fs = slices.Clone(fs)
	slices.Sort(fs)
	return slices.Compact(fs)
}

// String returns "os/arch" or "os/arch/variant", the form Parse accepts. OSVersion and
// OSFeatures are left out because no platform string syntax carries them.
func (p Platform) String() string {
	if p.Variant == "" {
		return p.OS + "/" + p.Architecture
	}
	return p.OS + "/" + p.Architecture + "/" + p.Variant
}

// Matches reports whether an image built for p can run on a node with platform n.
//
// Variant policy: the OS and the architecture must be equal, and every variant matches. A
// node's kubernetes.io/arch label carries no variant, so an arm/v6-only image matches every
// arm node, including v7 ones, and an arm/v7 one matches an arm node that might be v6.
// Refusing would strand pods on clusters whose nodes are fine; the kubelet and the runtime
// stay the final judge of the variant.
//
// Windows policy: a Windows image with an OSVersion runs on a node with a
// node.kubernetes.io/windows-build label by Microsoft's version-compatibility rules, as
// containerd's Windows matcher (github.com/containerd/platforms) applies them: major.minor
// must be equal; a host older than Windows Server 2022 (build 20348) needs the image's exact
// build ("10.0.17763.1234" runs on "10.0.17763" only); from 20348 on, a host runs images of
// every build from 20348 up to its own (a Windows Server 2022 image runs on Windows Server
// 23H2, Windows 11 and Windows Server 2025 nodes). The revision never matters. Versions that
// do not parse must be equal. When either side lacks the version, they match: without the
// information, blocking would be a guess.
//
// Matches does not allocate; it runs for every node in the Filter phase.
func (p Platform) Matches(n NodePlatform) bool {
	if p.OS != n.OS || p.Architecture != n.Architecture {
		return false
	}
	if p.OS == "windows" && p.OSVersion != "" && n.WindowsBuild != "" {
		return windowsHostRuns(n.WindowsBuild, p.OSVersion)
	}
	return true
}

// windowsLTSC2022 is the build of Windows Server 2022, from which Windows hosts run
// containers of older builds (down to this one) as well as their own.
const windowsLTSC2022 = 20348

// windowsHostRuns reports whether a Windows host of version host runs a process-isolated
// container of version ctr.
func windowsHostRuns(host, ctr string) bool {
	h, hok := parseWindowsVersion(host)
	c, cok := parseWindowsVersion(ctr)
	if !hok || !cok {
		return windowsBuild(host) == windowsBuild(ctr)
	}
	if h.major != c.major || h.minor != c.minor {
		return false
	}
	if h.build < windowsLTSC2022 {
		return h.build == c.build
	}
	return windowsLTSC2022 <= c.build && c.build <= h.build
}

// windowsCoRunnable reports whether some Windows host runs containers of both a and b:
// builds from 20348 on run together on a host of the higher build; older builds only with
// themselves.
func windowsCoRunnable(a, b string) bool {
	x, xok := parseWindowsVersion(a)
	y, yok := parseWindowsVersion(b)
	if !xok || !yok {
		return windowsBuild(a) == windowsBuild(b)
	}
	if x.major != y.major || x.minor != y.minor {
		return false
	}
	if x.build >= windowsLTSC2022 && y.build >= windowsLTSC2022 {
		return true
	}
	return x.build == y.build
}

type windowsVersion struct{ major, minor, build uint64 }

// parseWindowsVersion reads major.minor.build[.revision] without allocating.
func parseWindowsVersion(v string) (windowsVersion, bool) {
	var parts [3]uint64
	for i := range parts {
		end := 0
		for end < len(v) && v[end] != '.' {
			end++
		}
		if end == 0 || end > 9 || !isDigits(v[:end]) {
			return windowsVersion{}, false
		}
		for j := 0; j < end; j++ {
			parts[i] = parts[i]*10 + uint64(v[j]-'0')
		}
		if i < 2 {
			if end == len(v) {
				return windowsVersion{}, false
			}
			v = v[end+1:]
		} else {
			v = v[end:]
		}
	}
	if v != "" && (v[0] != '.' || !isDigits(v[1:])) {
		return windowsVersion{}, false
	}
	return windowsVersion{parts[0], parts[1], parts[2]}, true
}

// windowsBuild cuts a Windows version to major.minor.build: images carry the revision
// ("10.0.17763.1234"), the node label does not ("10.0.17763"), and the revision does not
// affect compatibility.
func windowsBuild(v string) string {
	dots := 0
	for i := 0; i < len(v); i++ {
		if v[i] == '.' {
			if dots++; dots == 3 {
				return v[:i]
			}
		}
	}
	return v
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

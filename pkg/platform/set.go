package platform

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Set is the set of platforms a pod may run on.
//
// The zero Set is unconstrained: it allows every platform, so a pod archfilter knows nothing
// about is never filtered. A constrained Set holds a few normalised platforms in a
// deterministic order; Filter scans them linearly, which beats any index at this size.
// A Set is immutable: methods never modify the receiver and results may share storage.
type Set struct {
	platforms   []Platform
	constrained bool
}

// Any returns the unconstrained Set, the same as the zero value.
func Any() Set {
	return Set{}
}

// NewSet returns the constrained Set of ps, normalised, de-duplicated and sorted. With no
// arguments it is the empty Set, which allows nothing: a pod whose images share no platform
// must not be scheduled anywhere.
func NewSet(ps ...Platform) Set {
	out := make([]Platform, len(ps))
	for i, p := range ps {
		out[i] = Normalize(p)
	}
	return newSet(out)
}

// newSet takes ownership of already normalised ps.
func newSet(ps []Platform) Set {
	slices.SortFunc(ps, comparePlatforms)
	ps = slices.CompactFunc(ps, func(a, b Platform) bool { return comparePlatforms(a, b) == 0 })
	return Set{platforms: ps, constrained: true}
}

// ParseList parses a comma-separated list such as "linux/amd64, linux/arm64", the form of
// the archfilter.io/platforms pod annotation and of the configuration. "*" alone is Any.
// Empty elements are errors rather than skipped, since "linux/amd64,,linux/arm64" more
// likely lost a platform than gained a comma.
//
// On error it returns the empty Set, so a caller that drops the error admits nothing rather
// than everything.
func ParseList(s string) (Set, error) {
	if strings.TrimSpace(s) == "*" {
		return Any(), nil
	}
	elems := strings.Split(s, ",")
	ps := make([]Platform, 0, len(elems))
	for i, elem := range elems {
		elem = strings.TrimSpace(elem)
		if elem == "" {
			return NewSet(), fmt.Errorf("invalid platform list %q: element %d is empty", s, i+1)
		}
		p, err := Parse(elem)
		if err != nil {
			return NewSet(), fmt.Errorf("invalid platform list %q: %w", s, err)
		}
		ps = append(ps, p)
	}
	return newSet(ps), nil
}

// IsAny reports whether s allows every platform.
func (s Set) IsAny() bool {
	return !s.constrained
}

// IsEmpty reports whether s allows no platform at all.
func (s Set) IsEmpty() bool {
	return s.constrained && len(s.platforms) == 0
}

// Platforms returns a copy of the platforms in s: nil for Any and for the empty Set, which
// IsAny tells apart.
func (s Set) Platforms() []Platform {
	if len(s.platforms) == 0 {
		return nil
	}
	return slices.Clone(s.platforms)
}

// Intersect returns the platforms allowed by both s and o: a pod runs only where every one of
// its images runs. Any ∩ x is x.
//
// Platforms meet at the os/architecture level, because that is all a node shows (see
// Platform.Matches): linux/arm/v6 ∩ linux/arm/v7 is linux/arm/v7, not empty. The result keeps
// the more specific information: a variant beats none, and of two variants the higher one
// wins (ARM and x86-64 variants are backward compatible, so a node that runs v7 code runs v6
// code too); variants that do not compare as versions keep the greater string, a tie-break
// that only affects reporting since variants never affect matching.
//
// Windows images meet where one host runs both (see Platform.Matches): builds from Windows
// Server 2022 (10.0.20348) on meet at the higher build, which then reads as the minimum build
// a node needs (10.0.20348 ∩ 10.0.26100 is 10.0.26100, and runs on 26100 hosts and newer);
// older builds meet only themselves. When only one side has an OSVersion the result keeps
// it. OSFeatures are united.
func (s Set) Intersect(o Set) Set {
	if !s.constrained {
		return o
	}
	if !o.constrained {
		return s
	}
	var out []Platform
	for _, a := range s.platforms {
		for _, b := range o.platforms {
			if p, ok := intersect(a, b); ok {
				out = append(out, p)
			}
		}
	}
	return newSet(out)
}

func intersect(a, b Platform) (Platform, bool) {
	if a.OS != b.OS || a.Architecture != b.Architecture {
		return Platform{}, false
	}
	if a.OS == "windows" && a.OSVersion != "" && b.OSVersion != "" &&
		!windowsCoRunnable(a.OSVersion, b.OSVersion) {
		return Platform{}, false
	}
	return Platform{
		OS:           a.OS,
		Architecture: a.Architecture,
		Variant:      moreSpecific(a.Variant, b.Variant),
		OSVersion:    moreSpecific(a.OSVersion, b.OSVersion),
		OSFeatures:   normalizeFeatures(slices.Concat(a.OSFeatures, b.OSFeatures)),
	}, true
}

// MatchesNode reports whether a pod limited to s can run on a node with platform n, under
// the variant and Windows policies of Platform.Matches. Any matches every node.
//
// MatchesNode does not allocate; it runs for every node in the Filter phase.
func (s Set) MatchesNode(n NodePlatform) bool {
	if !s.constrained {
		return true
	}
	for i := range s.platforms {
		if s.platforms[i].Matches(n) {
			return true
		}
	}
	return false
}

// String returns the platforms as "linux/amd64,linux/arm64", or "*" for Any and "" for the
// empty Set. Like Platform.String it leaves out OSVersion, and so lists a Windows
// platform once even when s holds it for several builds.
func (s Set) String() string {
	if !s.constrained {
		return "*"
	}
	var b strings.Builder
	prev := ""
	for _, p := range s.platforms {
		str := p.String()
		if str == prev {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(str)
		prev = str
	}
	return b.String()
}

// Architectures returns the distinct architectures s allows for os, sorted, e.g. the values
// for a kubernetes.io/arch node selector term. It returns nil for Any, which allows every
// architecture, so callers check IsAny first.
func (s Set) Architectures(os string) []string {
	var archs []string
	for _, p := range s.platforms {
		if p.OS == os && (len(archs) == 0 || archs[len(archs)-1] != p.Architecture) {
			archs = append(archs, p.Architecture)
		}
	}
	return archs
}

// comparePlatforms orders every field so that a Set's order, and therefore its String, does
// not depend on the order images or index entries arrived in.
func comparePlatforms(a, b Platform) int {
	return cmp.Or(
		strings.Compare(a.OS, b.OS),
		strings.Compare(a.Architecture, b.Architecture),
		strings.Compare(a.Variant, b.Variant),
		strings.Compare(a.OSVersion, b.OSVersion),
		slices.Compare(a.OSFeatures, b.OSFeatures),
	)
}

// moreSpecific returns whichever of a and b says more about what a node must provide. It is
// symmetric, so Intersect does not depend on the order of a pod's images.
func moreSpecific(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	if c := cmp.Or(compareVersions(a, b), strings.Compare(a, b)); c < 0 {
		return b
	}
	return a
}

// compareVersions orders "v7" < "v8" < "v8.2" < "v10" and "10.0.17763.9" < "10.0.17763.10",
// comparing dot-separated numeric components as numbers and anything else as strings.
func compareVersions(a, b string) int {
	a, b = strings.TrimPrefix(a, "v"), strings.TrimPrefix(b, "v")
	for a != "" || b != "" {
		var x, y string
		x, a, _ = strings.Cut(a, ".")
		y, b, _ = strings.Cut(b, ".")
		if isDigits(x) && isDigits(y) {
			x, y = strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
			if c := cmp.Compare(len(x), len(y)); c != 0 {
				return c
			}
		}
		if c := strings.Compare(x, y); c != 0 {
			return c
		}
	}
	return 0
}

package platform

import (
	"slices"
	"strings"
)

// Host architectures that can run the images of their 32-bit counterpart, the values of
// ArchFilterArgs.run32BitImagesOn.
const (
	// AMD64Runs386: amd64 nodes run linux/386 images. The kernel needs IA-32 emulation,
	// which some distributions turn off.
	AMD64Runs386 = "amd64"
	// ARM64RunsARM: arm64 nodes run arm/v5 to arm/v8 images. The CPU needs AArch32 at EL0,
	// which several server CPUs lack.
	ARM64RunsARM = "arm64"
)

// Compat holds the matching rules that depend on node hardware and kernels that no node label
// reports: whether 64-bit nodes run their 32-bit counterpart's images, as containerd allows
// (github.com/containerd/platforms: an amd64 host also pulls 386, an arm64 host arm/v8 down
// to arm/v5). The zero Compat applies no such rule, the safe default.
type Compat struct {
	amd64Runs386 bool
	arm64RunsARM bool
}

// NewCompat returns the rules for the given host architectures (AMD64Runs386, ARM64RunsARM);
// other values are ignored, since validation refuses them.
func NewCompat(hosts ...string) Compat {
	return Compat{
		amd64Runs386: slices.Contains(hosts, AMD64Runs386),
		arm64RunsARM: slices.Contains(hosts, ARM64RunsARM),
	}
}

// IsZero reports whether c applies no rule.
func (c Compat) IsZero() bool {
	return c == Compat{}
}

// Host returns the 64-bit architecture that runs p under c, and ok false when no rule of c
// applies to p.
func (c Compat) Host(p Platform) (arch string, ok bool) {
	switch {
	case c.amd64Runs386 && p.Architecture == "386":
		return "amd64", true
	case c.arm64RunsARM && p.Architecture == "arm" && armRunsOnARM64(p.Variant):
		return "arm64", true
	}
	return "", false
}

// armRunsOnARM64: AArch32 executes ARMv8 code and every older revision down to v5 (an
// arm image without a variant is normalised to v7 by the runtime).
func armRunsOnARM64(variant string) bool {
	switch variant {
	case "", "v5", "v6", "v7", "v8":
		return true
	}
	return false
}

// Expand returns s with, for each platform a rule of c applies to, the 64-bit platform
// that runs it, so that Intersect, MatchesNode and everything built on them see the rule:
// {linux/arm/v7} becomes {linux/arm/v7, linux/arm64}. Any stays Any. Expand does not
// allocate when no rule applies.
func (c Compat) Expand(s Set) Set {
	if c.IsZero() || !s.constrained {
		return s
	}
	var added []Platform
	for _, p := range s.platforms {
		if arch, ok := c.Host(p); ok {
			added = append(added, Platform{OS: p.OS, Architecture: arch, OSVersion: p.OSVersion, OSFeatures: p.OSFeatures})
		}
	}
	if added == nil {
		return s
	}
	return newSet(append(slices.Clone(s.platforms), added...))
}

// ParseList parses configured platforms, one "os/arch[/variant]" per element (as
// ArchFilterArgs.fallbackPlatforms holds them), as ParseList does, and widens the result by
// c as every image's platforms are widened: a configured linux/arm/v7 then admits the
// arm64 nodes a resolved arm/v7 image would. The scheduler plugin and the placement
// controller both read fallbackPlatforms through it, so they agree.
func (c Compat) ParseList(elems []string) (Set, error) {
	set, err := ParseList(strings.Join(elems, ","))
	if err != nil {
		return set, err
	}
	return c.Expand(set), nil
}

// Rule names the rule under which a node runs p: "" when p matches the node directly,
// AMD64Runs386 or ARM64RunsARM when a rule of c makes it run, and ok false when it does not
// run there. It is for explaining a decision, e.g. in the kubectl plugin.
func (c Compat) Rule(p Platform, n NodePlatform) (rule string, ok bool) {
	if p.Matches(n) {
		return "", true
	}
	if arch, ok := c.Host(p); ok {
		q := p
		q.Architecture, q.Variant = arch, ""
		if q.Matches(n) {
			return arch, true
		}
	}
	return "", false
}

package platform

import (
	"cmp"
	"slices"
	"strings"
)

// WindowsBuild is the major.minor.build a Windows image needs its host to have,
// the value of the node label node.kubernetes.io/windows-build; "" for other
// operating systems and for Windows images that name no os.version.
func (p Platform) WindowsBuild() string {
	if p.OS != "windows" {
		return ""
	}
	return windowsBuild(p.OSVersion)
}

// knownWindowsHostBuilds are the builds of the generally available Windows releases that
// run process-isolated containers, from Windows Server 2019 (the oldest Kubernetes
// supports) on, as the kubelet writes them into node.kubernetes.io/windows-build. Sources:
// Microsoft's "Windows container version compatibility"
// (https://learn.microsoft.com/virtualization/windowscontainers/deploy-containers/version-compatibility),
// the Windows Server and Windows 11 release information pages
// (https://learn.microsoft.com/windows/release-health/windows-server-release-info,
// https://learn.microsoft.com/windows/release-health/windows11-release-information), which
// containerd's Windows matcher cites too.
//
// Builds below 20348 run only images of their own build, which an affinity names anyway;
// the list matters for the builds from 20348 on, each of which runs every image from
// 20348 up to itself. Keep it sorted; a new release is one line.
var knownWindowsHostBuilds = []string{
	"10.0.17763", // Windows Server 2019 (LTSC), Windows 10 1809
	"10.0.20348", // Windows Server 2022 (LTSC)
	"10.0.22000", // Windows 11 21H2
	"10.0.22621", // Windows 11 22H2
	"10.0.22631", // Windows 11 23H2
	"10.0.25398", // Windows Server, version 23H2 (Annual Channel)
	"10.0.26100", // Windows Server 2025 (LTSC), Windows 11 24H2
	"10.0.26200", // Windows 11 25H2
}

// KnownWindowsHostBuilds returns the node.kubernetes.io/windows-build values of the released
// Windows hosts archfilter knows of, oldest first: 10.0.17763 (Windows Server 2019),
// 10.0.20348 (Windows Server 2022), 10.0.22000, 10.0.22621, 10.0.22631 (Windows 11 21H2 to
// 23H2), 10.0.25398 (Windows Server 23H2), 10.0.26100 (Windows Server 2025, Windows 11
// 24H2) and 10.0.26200 (Windows 11 25H2). Node affinity cannot compare builds (Gt and Lt
// take integers, and "10.0.20348" is not one), so whoever writes affinity for a Windows
// image enumerates its compatible hosts (Set.WindowsHostBuilds) from this list and the
// builds of the nodes it can see. The result is a copy.
func KnownWindowsHostBuilds() []string {
	return slices.Clone(knownWindowsHostBuilds)
}

// WindowsHostBuilds returns the node.kubernetes.io/windows-build values on which a Windows
// platform of s runs by Platform.Matches (Microsoft's version-compatibility rules as
// containerd applies them), chosen among hosts and the builds of s's own Windows
// platforms, de-duplicated and in build order: the values of a node affinity `In`
// expression that admits exactly the Windows nodes Filter admits, as far as their builds
// are among the candidates. A Windows Server 2022 image (10.0.20348.x) gets every
// candidate from 10.0.20348 up (23H2, Windows 11, 2025...); a Windows Server 2019 image
// (10.0.17763.x) gets 10.0.17763 only.
//
// ok is false when no build constraint applies: s is Any, holds no Windows platform, or
// holds a Windows platform without an os.version (which runs on every build). Candidates
// are cut to major.minor.build; one that does not parse only matches itself, as in Matches.
func (s Set) WindowsHostBuilds(hosts []string) (builds []string, ok bool) {
	if !s.constrained {
		return nil, false
	}
	var windows []Platform
	for _, p := range s.platforms {
		if p.OS != "windows" {
			continue
		}
		if p.OSVersion == "" {
			return nil, false
		}
		windows = append(windows, p)
	}
	if len(windows) == 0 {
		return nil, false
	}
	candidates := slices.Clone(hosts)
	for _, p := range windows {
		candidates = append(candidates, p.WindowsBuild())
	}
	for _, h := range candidates {
		h = windowsBuild(h)
		if h == "" || slices.Contains(builds, h) {
			continue
		}
		for _, p := range windows {
			if p.Matches(NodePlatform{OS: p.OS, Architecture: p.Architecture, WindowsBuild: h}) {
				builds = append(builds, h)
				break
			}
		}
	}
	slices.SortFunc(builds, func(a, b string) int { return cmp.Or(compareVersions(a, b), strings.Compare(a, b)) })
	return builds, true
}

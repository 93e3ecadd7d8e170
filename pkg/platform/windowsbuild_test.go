package platform

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlatformWindowsBuild(t *testing.T) {
	for _, tc := range []struct {
		p    Platform
		want string
	}{
		{Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1234"}, "10.0.17763"},
		{Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348"}, "10.0.20348"},
		{Platform{OS: "windows", Architecture: "amd64"}, ""},
		{Platform{OS: "linux", Architecture: "amd64", OSVersion: "10.0.17763.1"}, ""},
	} {
		if got := tc.p.WindowsBuild(); got != tc.want {
			t.Errorf("%+v.WindowsBuild() = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestKnownWindowsHostBuilds: the list is what Set.WindowsHostBuilds enumerates, so every
// entry must be a build the matcher parses, in order, and callers must not share it.
func TestKnownWindowsHostBuilds(t *testing.T) {
	builds := KnownWindowsHostBuilds()
	for i, b := range builds {
		v, ok := parseWindowsVersion(b)
		if !ok || b != windowsBuild(b) || v.major != 10 || v.minor != 0 {
			t.Errorf("%q is not a 10.0.build node label value", b)
		}
		if i > 0 && compareVersions(builds[i-1], b) >= 0 {
			t.Errorf("%q follows %q: want build order without duplicates", b, builds[i-1])
		}
	}
	for _, b := range []string{"10.0.17763", "10.0.20348", "10.0.25398", "10.0.26100"} {
		if !slices.Contains(builds, b) {
			t.Errorf("known builds lack %s, a Windows Server release", b)
		}
	}
	builds[0] = "changed"
	if KnownWindowsHostBuilds()[0] == "changed" {
		t.Error("KnownWindowsHostBuilds returned its own slice")
	}
}

// TestSetWindowsHostBuilds follows Microsoft's version-compatibility rules as containerd's
// Windows matcher applies them (github.com/containerd/platforms,
// platform_windows_compat.go: checkWindowsHostAndContainerCompat): major.minor equal; a
// host below 20348 runs only its own build; a host from 20348 on runs every build from
// 20348 up to its own. The builds listed are exactly the candidates Matches accepts.
func TestSetWindowsHostBuilds(t *testing.T) {
	win := func(version string) Platform {
		return Platform{OS: "windows", Architecture: "amd64", OSVersion: version}
	}
	known := KnownWindowsHostBuilds()
	for _, tc := range []struct {
		name   string
		set    Set
		hosts  []string
		want   []string
		wantOK bool
	}{
		{
			name:   "Windows Server 2019 image: its own build only (below 20348, exact)",
			set:    NewSet(win("10.0.17763.1234")),
			hosts:  known,
			want:   []string{"10.0.17763"},
			wantOK: true,
		},
		{
			name:   "Windows Server 2022 image: 2022, Windows 11, 23H2, 2025 and later hosts",
			set:    NewSet(win("10.0.20348.2113")),
			hosts:  known,
			want:   []string{"10.0.20348", "10.0.22000", "10.0.22621", "10.0.22631", "10.0.25398", "10.0.26100", "10.0.26200"},
			wantOK: true,
		},
		{
			name:   "Windows Server 2025 image: 2025 and later hosts only (a host never runs a newer build)",
			set:    NewSet(win("10.0.26100.1")),
			hosts:  known,
			want:   []string{"10.0.26100", "10.0.26200"},
			wantOK: true,
		},
		{
			name:   "2022 and 2025 images together (the intersection keeps 26100): hosts that run both",
			set:    NewSet(win("10.0.20348.1")).Intersect(NewSet(win("10.0.26100.1"))),
			hosts:  known,
			want:   []string{"10.0.26100", "10.0.26200"},
			wantOK: true,
		},
		{
			name:   "an index with 2019 and 2022 images: the union of their hosts",
			set:    NewSet(win("10.0.17763.1"), win("10.0.20348.1")),
			hosts:  known,
			want:   []string{"10.0.17763", "10.0.20348", "10.0.22000", "10.0.22621", "10.0.22631", "10.0.25398", "10.0.26100", "10.0.26200"},
			wantOK: true,
		},
		{
			name:   "a cluster node's build newer than the known list is a candidate too",
			set:    NewSet(win("10.0.20348.1")),
			hosts:  []string{"10.0.26100", "10.0.28000", "10.0.17763"},
			want:   []string{"10.0.20348", "10.0.26100", "10.0.28000"},
			wantOK: true,
		},
		{
			name:   "the image's own build is listed without any candidate",
			set:    NewSet(win("10.0.20349.5")),
			want:   []string{"10.0.20349"},
			wantOK: true,
		},
		{
			name:   "major.minor must be equal",
			set:    NewSet(win("6.3.9600.1")),
			hosts:  known,
			want:   []string{"6.3.9600"},
			wantOK: true,
		},
		{
			name:   "an os.version that does not parse matches itself only",
			set:    NewSet(win("ltsc2022")),
			hosts:  append(slices.Clone(known), "ltsc2022"),
			want:   []string{"ltsc2022"},
			wantOK: true,
		},
		{
			name:   "candidates with a revision are cut to the build",
			set:    NewSet(win("10.0.20348.1")),
			hosts:  []string{"10.0.26100.2033"},
			want:   []string{"10.0.20348", "10.0.26100"},
			wantOK: true,
		},
		{name: "a Windows image without os.version runs on every build", set: NewSet(win("10.0.20348.1"), win("")), hosts: known},
		{name: "no Windows platform", set: NewSet(Platform{OS: "linux", Architecture: "amd64"}), hosts: known},
		{name: "Any", set: Any(), hosts: known},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.set.WindowsHostBuilds(tc.hosts)
			if ok != tc.wantOK {
				t.Errorf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("WindowsHostBuilds (-want,+got):\n%s", diff)
			}
			// Every build listed runs the set, every candidate left out does not.
			for _, h := range append(slices.Clone(tc.hosts), got...) {
				n := NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: windowsBuild(h)}
				if listed := slices.Contains(got, n.WindowsBuild); tc.wantOK && listed != tc.set.MatchesNode(n) {
					t.Errorf("build %s listed %v, but MatchesNode says %v", h, listed, tc.set.MatchesNode(n))
				}
			}
		})
	}
}

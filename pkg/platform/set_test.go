package platform

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	linuxAMD64   = Platform{OS: "linux", Architecture: "amd64"}
	linuxARM64   = Platform{OS: "linux", Architecture: "arm64"}
	linuxARMv6   = Platform{OS: "linux", Architecture: "arm", Variant: "v6"}
	linuxARMv7   = Platform{OS: "linux", Architecture: "arm", Variant: "v7"}
	linuxS390X   = Platform{OS: "linux", Architecture: "s390x"}
	windowsAMD64 = Platform{OS: "windows", Architecture: "amd64"}
	ltsc2019     = Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1234"}
	ltsc2022     = Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.2113"}
	ltsc2025     = Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.26100.1742"}
)

// setContents makes cmp report a Set's platforms, os.version included, rather than the
// String it would otherwise fall back to.
var setContents = cmp.Transformer("Set", func(s Set) setView {
	return setView{Any: s.IsAny(), Platforms: s.Platforms()}
})

type setView struct {
	Any       bool
	Platforms []Platform
}

func TestNewSet(t *testing.T) {
	tests := []struct {
		name string
		in   []Platform
		want []Platform
	}{
		{
			name: "no platforms",
			want: nil,
		},
		{
			name: "sorted",
			in:   []Platform{windowsAMD64, linuxS390X, linuxARM64, linuxAMD64},
			want: []Platform{linuxAMD64, linuxARM64, linuxS390X, windowsAMD64},
		},
		{
			name: "normalised and de-duplicated",
			in: []Platform{
				{OS: "linux", Architecture: "aarch64"},
				{OS: "Linux", Architecture: "arm64", Variant: "v8"},
				{OS: "linux", Architecture: "x86_64"},
				linuxAMD64,
			},
			want: []Platform{linuxAMD64, linuxARM64},
		},
		{
			name: "variants are distinct platforms",
			in:   []Platform{linuxARMv7, {OS: "linux", Architecture: "armel"}, {OS: "linux", Architecture: "armhf"}},
			want: []Platform{linuxARMv6, linuxARMv7},
		},
		{
			name: "windows builds are distinct platforms",
			in:   []Platform{ltsc2022, ltsc2019, ltsc2022},
			want: []Platform{ltsc2019, ltsc2022},
		},
		{
			name: "features distinguish platforms, in any order",
			in: []Platform{
				{OS: "windows", Architecture: "amd64", OSFeatures: []string{"b", "a"}},
				{OS: "windows", Architecture: "amd64", OSFeatures: []string{"a", "b"}},
				windowsAMD64,
			},
			want: []Platform{windowsAMD64, {OS: "windows", Architecture: "amd64", OSFeatures: []string{"a", "b"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSet(tc.in...)
			if s.IsAny() {
				t.Error("IsAny() = true, want false")
			}
			if got, want := s.IsEmpty(), len(tc.want) == 0; got != want {
				t.Errorf("IsEmpty() = %v, want %v", got, want)
			}
			if diff := cmp.Diff(tc.want, s.Platforms()); diff != "" {
				t.Errorf("Platforms() (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNewSetDoesNotModifyArgs(t *testing.T) {
	in := []Platform{linuxS390X, {OS: "linux", Architecture: "x86_64"}}
	NewSet(in...)
	if diff := cmp.Diff([]Platform{linuxS390X, {OS: "linux", Architecture: "x86_64"}}, in); diff != "" {
		t.Errorf("arguments changed (-want,+got):\n%s", diff)
	}
}

func TestAny(t *testing.T) {
	for name, s := range map[string]Set{"zero": {}, "Any()": Any()} {
		t.Run(name, func(t *testing.T) {
			if !s.IsAny() {
				t.Error("IsAny() = false, want true")
			}
			if s.IsEmpty() {
				t.Error("IsEmpty() = true, want false")
			}
			if got := s.Platforms(); got != nil {
				t.Errorf("Platforms() = %v, want nil", got)
			}
			if !s.MatchesNode(NodePlatform{OS: "plan9", Architecture: "mips"}) {
				t.Error("MatchesNode() = false, want true")
			}
		})
	}
}

func TestPlatformsReturnsCopy(t *testing.T) {
	s := NewSet(linuxAMD64)
	s.Platforms()[0].Architecture = "arm64"
	if diff := cmp.Diff([]Platform{linuxAMD64}, s.Platforms()); diff != "" {
		t.Errorf("Set changed through Platforms() (-want,+got):\n%s", diff)
	}
}

func TestParseList(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Set
		wantErr string
	}{
		{
			name: "one",
			in:   "linux/amd64",
			want: NewSet(linuxAMD64),
		},
		{
			name: "spaces around elements",
			in:   " linux/amd64,  linux/arm64 ,linux/arm/v7 ",
			want: NewSet(linuxAMD64, linuxARM64, linuxARMv7),
		},
		{
			name: "newlines from a YAML block scalar",
			in:   "linux/amd64,\nlinux/arm64\n",
			want: NewSet(linuxAMD64, linuxARM64),
		},
		{
			name: "normalised and de-duplicated",
			in:   "linux/x86_64, linux/amd64, linux/aarch64, linux/arm64/v8",
			want: NewSet(linuxAMD64, linuxARM64),
		},
		{
			name: "any",
			in:   " * ",
			want: Any(),
		},
		{
			name:    "empty",
			in:      "",
			want:    NewSet(),
			wantErr: `invalid platform list "": element 1 is empty`,
		},
		{
			name:    "blank",
			in:      "  ",
			want:    NewSet(),
			wantErr: `invalid platform list "  ": element 1 is empty`,
		},
		{
			name:    "empty element in the middle",
			in:      "linux/amd64,,linux/arm64",
			want:    NewSet(),
			wantErr: `invalid platform list "linux/amd64,,linux/arm64": element 2 is empty`,
		},
		{
			name:    "trailing comma",
			in:      "linux/amd64,",
			want:    NewSet(),
			wantErr: `invalid platform list "linux/amd64,": element 2 is empty`,
		},
		{
			name:    "invalid element",
			in:      "linux/amd64, arm64",
			want:    NewSet(),
			wantErr: `invalid platform list "linux/amd64, arm64": invalid platform "arm64": want os/arch[/variant]`,
		},
		{
			name:    "space inside an element",
			in:      "linux/amd64, linux/ arm64",
			want:    NewSet(),
			wantErr: `invalid platform list "linux/amd64, linux/ arm64": invalid platform "linux/ arm64": architecture " arm64" contains ' ', want only letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "any mixed with platforms",
			in:      "*, linux/amd64",
			want:    NewSet(),
			wantErr: `invalid platform list "*, linux/amd64": invalid platform "*": want os/arch[/variant]`,
		},
		{
			name:    "semicolon separated",
			in:      "linux/amd64;linux/arm64",
			want:    NewSet(),
			wantErr: `invalid platform list "linux/amd64;linux/arm64": invalid platform "linux/amd64;linux/arm64": architecture "amd64;linux" contains ';', want only letters, digits, '.', '_' and '-'`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseList(tc.in)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("ParseList(%q) error (-want,+got):\n%s", tc.in, diff)
			}
			if diff := cmp.Diff(tc.want, got, setContents); diff != "" {
				t.Errorf("ParseList(%q) (-want,+got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestIntersect(t *testing.T) {
	tests := []struct {
		name string
		a, b Set
		want Set
	}{
		{
			name: "any and any",
			a:    Any(),
			b:    Any(),
			want: Any(),
		},
		{
			name: "any and set",
			a:    Any(),
			b:    NewSet(linuxAMD64, linuxARM64),
			want: NewSet(linuxAMD64, linuxARM64),
		},
		{
			name: "set and any",
			a:    NewSet(linuxAMD64, linuxARM64),
			b:    Any(),
			want: NewSet(linuxAMD64, linuxARM64),
		},
		{
			name: "any and empty",
			a:    Any(),
			b:    NewSet(),
			want: NewSet(),
		},
		{
			name: "empty and set",
			a:    NewSet(),
			b:    NewSet(linuxAMD64),
			want: NewSet(),
		},
		{
			name: "common platform across images",
			a:    NewSet(linuxAMD64, linuxARM64),
			b:    NewSet(linuxAMD64),
			want: NewSet(linuxAMD64),
		},
		{
			name: "disjoint",
			a:    NewSet(linuxAMD64),
			b:    NewSet(linuxARM64, linuxS390X),
			want: NewSet(),
		},
		{
			name: "same arch, different os",
			a:    NewSet(linuxAMD64),
			b:    NewSet(windowsAMD64),
			want: NewSet(),
		},
		{
			name: "equal sets",
			a:    NewSet(linuxAMD64, linuxARM64, linuxS390X),
			b:    NewSet(linuxS390X, linuxARM64, linuxAMD64),
			want: NewSet(linuxAMD64, linuxARM64, linuxS390X),
		},
		{
			name: "arm variants meet at the higher variant",
			a:    NewSet(linuxARMv7),
			b:    NewSet(linuxARMv6),
			want: NewSet(linuxARMv7),
		},
		{
			name: "arm variants meet at the higher variant, either order",
			a:    NewSet(linuxARMv6),
			b:    NewSet(linuxARMv7),
			want: NewSet(linuxARMv7),
		},
		{
			name: "variants compare as numbers",
			a:    NewSet(Platform{OS: "linux", Architecture: "arm64", Variant: "v10"}),
			b:    NewSet(Platform{OS: "linux", Architecture: "arm64", Variant: "v9"}),
			want: NewSet(Platform{OS: "linux", Architecture: "arm64", Variant: "v10"}),
		},
		{
			name: "minor variant beats major",
			a:    NewSet(Platform{OS: "linux", Architecture: "arm64", Variant: "v8.2"}),
			b:    NewSet(linuxARM64),
			want: NewSet(Platform{OS: "linux", Architecture: "arm64", Variant: "v8.2"}),
		},
		{
			name: "empty variant keeps the other's",
			a:    NewSet(Platform{OS: "linux", Architecture: "amd64", Variant: "v3"}),
			b:    NewSet(linuxAMD64),
			want: NewSet(Platform{OS: "linux", Architecture: "amd64", Variant: "v3"}),
		},
		{
			name: "variants that are not versions keep the greater string",
			a:    NewSet(Platform{OS: "linux", Architecture: "riscv64", Variant: "rva20u64"}),
			b:    NewSet(Platform{OS: "linux", Architecture: "riscv64", Variant: "rva22u64"}),
			want: NewSet(Platform{OS: "linux", Architecture: "riscv64", Variant: "rva22u64"}),
		},
		{
			name: "several variants collapse to what both allow",
			a:    NewSet(linuxARMv6, linuxARMv7, linuxAMD64),
			b:    NewSet(linuxARMv7),
			want: NewSet(linuxARMv7),
		},
		{
			name: "windows different builds",
			a:    NewSet(ltsc2019),
			b:    NewSet(ltsc2022),
			want: NewSet(),
		},
		{
			name: "windows same build keeps the higher revision",
			a:    NewSet(ltsc2019),
			b:    NewSet(Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.999"}),
			want: NewSet(ltsc2019),
		},
		{
			name: "windows same build with and without revision",
			a:    NewSet(Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763"}),
			b:    NewSet(ltsc2019),
			want: NewSet(ltsc2019),
		},
		{
			name: "windows version on one side only is kept",
			a:    NewSet(windowsAMD64),
			b:    NewSet(ltsc2019),
			want: NewSet(ltsc2019),
		},
		{
			name: "windows unversioned against several builds",
			a:    NewSet(windowsAMD64, linuxAMD64),
			b:    NewSet(ltsc2019, ltsc2022),
			want: NewSet(ltsc2019, ltsc2022),
		},
		// Microsoft's version-compatibility rules (containerd's Windows matcher): builds from
		// 10.0.20348 on run on hosts of their build or newer, so a 2022 and a 2025 image run
		// together on 2025 hosts; the intersection keeps the minimum host build.
		{
			name: "windows 2022 and 2025 images need a 2025 host",
			a:    NewSet(ltsc2022),
			b:    NewSet(ltsc2025),
			want: NewSet(ltsc2025),
		},
		{
			name: "windows 2019 image runs with no newer build",
			a:    NewSet(ltsc2019),
			b:    NewSet(ltsc2025),
			want: NewSet(),
		},
		{
			name: "windows builds of other major.minor never meet",
			a:    NewSet(Platform{OS: "windows", Architecture: "amd64", OSVersion: "6.3.20348"}),
			b:    NewSet(ltsc2025),
			want: NewSet(),
		},
		{
			name: "windows builds pick the common one",
			a:    NewSet(ltsc2019, ltsc2022),
			b:    NewSet(ltsc2022, linuxAMD64),
			want: NewSet(ltsc2022),
		},
		{
			name: "features are united",
			a:    NewSet(Platform{OS: "windows", Architecture: "amd64", OSFeatures: []string{"win32k"}}),
			b:    NewSet(Platform{OS: "windows", Architecture: "amd64", OSFeatures: []string{"a", "win32k"}}),
			want: NewSet(Platform{OS: "windows", Architecture: "amd64", OSFeatures: []string{"a", "win32k"}}),
		},
		{
			name: "results de-duplicated",
			a:    NewSet(linuxAMD64, Platform{OS: "linux", Architecture: "amd64", Variant: "v2"}),
			b:    NewSet(Platform{OS: "linux", Architecture: "amd64", Variant: "v2"}),
			want: NewSet(Platform{OS: "linux", Architecture: "amd64", Variant: "v2"}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.a.Intersect(tc.b)
			if diff := cmp.Diff(tc.want, got, setContents); diff != "" {
				t.Errorf("%v ∩ %v (-want,+got):\n%s", tc.a, tc.b, diff)
			}
			if diff := cmp.Diff(got, tc.b.Intersect(tc.a), setContents); diff != "" {
				t.Errorf("Intersect is not commutative (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestIntersectDoesNotModifyOperands(t *testing.T) {
	feature := Platform{OS: "windows", Architecture: "amd64", OSFeatures: []string{"z"}}
	a := NewSet(feature, linuxAMD64)
	b := NewSet(Platform{OS: "windows", Architecture: "amd64", OSFeatures: []string{"a"}})
	a.Intersect(b)
	if diff := cmp.Diff(NewSet(feature, linuxAMD64), a, setContents); diff != "" {
		t.Errorf("receiver changed (-want,+got):\n%s", diff)
	}
}

// TestIntersectAgreesWithMatchesNode checks the property the plugin relies on: a node runs
// the intersection exactly when it runs every image. Nodes without a Windows build are left
// out, since for them "no common build" is deliberately stricter than either image alone.
func TestIntersectAgreesWithMatchesNode(t *testing.T) {
	sets := []Set{
		Any(),
		NewSet(),
		NewSet(linuxAMD64),
		NewSet(linuxAMD64, linuxARM64),
		NewSet(linuxARMv6),
		NewSet(linuxARMv7, linuxS390X),
		NewSet(windowsAMD64),
		NewSet(ltsc2019),
		NewSet(ltsc2019, ltsc2022, linuxARM64),
		NewSet(Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763"}),
		NewSet(ltsc2022),
		NewSet(ltsc2025, linuxAMD64),
		NewSet(Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.22631.1"}),
		NewSet(Platform{OS: "windows", Architecture: "amd64", OSVersion: "not-a-version"}),
	}
	nodes := []NodePlatform{
		{OS: "linux", Architecture: "amd64"},
		{OS: "linux", Architecture: "arm64"},
		{OS: "linux", Architecture: "arm"},
		{OS: "linux", Architecture: "s390x"},
		{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.17763"},
		{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.20348"},
		{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.22631"},
		{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.25398"},
		{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.26100"},
		{OS: "windows", Architecture: "amd64", WindowsBuild: "not-a-version"},
	}
	for _, a := range sets {
		for _, b := range sets {
			both := a.Intersect(b)
			for _, n := range nodes {
				want := a.MatchesNode(n) && b.MatchesNode(n)
				if got := both.MatchesNode(n); got != want {
					t.Errorf("(%v ∩ %v = %v).MatchesNode(%+v) = %v, want %v", a, b, both, n, got, want)
				}
			}
		}
	}
}

func TestSetMatchesNode(t *testing.T) {
	tests := []struct {
		name string
		set  Set
		node NodePlatform
		want bool
	}{
		{
			name: "any",
			set:  Any(),
			node: NodePlatform{OS: "linux", Architecture: "loong64"},
			want: true,
		},
		{
			name: "any matches an unknown node",
			set:  Any(),
			node: NodePlatform{},
			want: true,
		},
		{
			name: "empty",
			set:  NewSet(),
			node: NodePlatform{OS: "linux", Architecture: "amd64"},
			want: false,
		},
		{
			name: "first platform",
			set:  NewSet(linuxAMD64, linuxARM64),
			node: NodePlatform{OS: "linux", Architecture: "amd64"},
			want: true,
		},
		{
			name: "last platform",
			set:  NewSet(linuxAMD64, linuxARM64, linuxS390X),
			node: NodePlatform{OS: "linux", Architecture: "s390x"},
			want: true,
		},
		{
			name: "none",
			set:  NewSet(linuxAMD64, linuxARM64),
			node: NodePlatform{OS: "linux", Architecture: "ppc64le"},
			want: false,
		},
		{
			name: "unknown node",
			set:  NewSet(linuxAMD64),
			node: NodePlatform{},
			want: false,
		},
		{
			name: "variant policy: arm/v6 image on arm node",
			set:  NewSet(linuxARMv6),
			node: NodePlatform{OS: "linux", Architecture: "arm"},
			want: true,
		},
		{
			name: "windows matching build among several",
			set:  NewSet(ltsc2019, ltsc2022),
			node: NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.20348"},
			want: true,
		},
		{
			name: "windows 2022 image on a 2025 node (build compatibility)",
			set:  NewSet(ltsc2019, ltsc2022),
			node: NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.26100"},
			want: true,
		},
		{
			name: "windows no matching build",
			set:  NewSet(ltsc2019, ltsc2025),
			node: NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.20348"},
			want: false,
		},
		{
			name: "windows node without build label",
			set:  NewSet(ltsc2019),
			node: NodePlatform{OS: "windows", Architecture: "amd64"},
			want: true,
		},
		{
			name: "windows image on linux node",
			set:  NewSet(ltsc2019),
			node: NodePlatform{OS: "linux", Architecture: "amd64"},
			want: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.set.MatchesNode(tc.node); got != tc.want {
				t.Errorf("%v.MatchesNode(%+v) = %v, want %v", tc.set, tc.node, got, tc.want)
			}
		})
	}
}

func TestSetMatchesNodeAllocs(t *testing.T) {
	s := NewSet(linuxAMD64, linuxARM64, linuxARMv7, ltsc2019, ltsc2022)
	nodes := []NodePlatform{
		{OS: "linux", Architecture: "s390x"},
		{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.20348"},
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, n := range nodes {
			s.MatchesNode(n)
		}
	})
	if allocs != 0 {
		t.Errorf("MatchesNode() allocated %v times per run, want 0", allocs)
	}
}

func TestSetString(t *testing.T) {
	tests := []struct {
		name string
		set  Set
		want string
	}{
		{
			name: "any",
			set:  Any(),
			want: "*",
		},
		{
			name: "empty",
			set:  NewSet(),
			want: "",
		},
		{
			name: "sorted whatever the input order",
			set:  NewSet(linuxS390X, linuxARMv7, linuxAMD64, linuxARM64),
			want: "linux/amd64,linux/arm/v7,linux/arm64,linux/s390x",
		},
		{
			name: "windows builds listed once",
			set:  NewSet(ltsc2022, ltsc2019, linuxAMD64),
			want: "linux/amd64,windows/amd64",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.set.String()); diff != "" {
				t.Errorf("String() (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSetStringRoundTrip(t *testing.T) {
	for _, s := range []Set{Any(), NewSet(linuxAMD64), NewSet(linuxARMv6, linuxARMv7, linuxARM64, linuxS390X)} {
		t.Run(s.String(), func(t *testing.T) {
			got, err := ParseList(s.String())
			if err != nil {
				t.Fatalf("ParseList(%q): %v", s.String(), err)
			}
			if diff := cmp.Diff(s, got, setContents); diff != "" {
				t.Errorf("ParseList(%q) (-want,+got):\n%s", s.String(), diff)
			}
		})
	}
}

func TestSetArchitectures(t *testing.T) {
	tests := []struct {
		name string
		set  Set
		os   string
		want []string
	}{
		{
			name: "any",
			set:  Any(),
			os:   "linux",
			want: nil,
		},
		{
			name: "empty",
			set:  NewSet(),
			os:   "linux",
			want: nil,
		},
		{
			name: "distinct and sorted",
			set:  NewSet(linuxS390X, linuxARMv7, linuxARMv6, linuxAMD64, windowsAMD64),
			os:   "linux",
			want: []string{"amd64", "arm", "s390x"},
		},
		{
			name: "only the given os",
			set:  NewSet(linuxARM64, ltsc2019, ltsc2022),
			os:   "windows",
			want: []string{"amd64"},
		},
		{
			name: "os not in set",
			set:  NewSet(linuxARM64),
			os:   "windows",
			want: nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.set.Architectures(tc.os)); diff != "" {
				t.Errorf("Architectures(%q) (-want,+got):\n%s", tc.os, diff)
			}
		})
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{a: "v7", b: "v7", want: 0},
		{a: "v6", b: "v7", want: -1},
		{a: "v10", b: "v9", want: 1},
		{a: "v8", b: "v8.2", want: -1},
		{a: "v07", b: "v7", want: 0},
		{a: "10.0.17763.999", b: "10.0.17763.1234", want: -1},
		{a: "rva20u64", b: "rva22u64", want: -1},
		{a: "v8", b: "vfp", want: -1},
	}
	for _, tc := range tests {
		t.Run(tc.a+"_"+tc.b, func(t *testing.T) {
			if got := compareVersions(tc.a, tc.b); got != tc.want {
				t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := compareVersions(tc.b, tc.a); got != -tc.want {
				t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
			}
		})
	}
}

func BenchmarkSetMatchesNode(b *testing.B) {
	// A pod built for four platforms against a node matching none, the longest scan.
	s := NewSet(linuxAMD64, linuxARM64, linuxARMv7, linuxS390X)
	node := NodePlatform{OS: "linux", Architecture: "ppc64le"}
	b.ReportAllocs()
	for b.Loop() {
		s.MatchesNode(node)
	}
}

// TestMatchesNodeWindowsDoesNotAllocate: Filter's accept path runs MatchesNode for every
// node, and the Windows build comparison parses versions on each call.
func TestMatchesNodeWindowsDoesNotAllocate(t *testing.T) {
	set := NewSet(ltsc2019, ltsc2022)
	node := NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.26100"}
	allocs := testing.AllocsPerRun(100, func() {
		if !set.MatchesNode(node) {
			t.Fatal("MatchesNode = false, want true")
		}
	})
	if allocs != 0 {
		t.Errorf("MatchesNode allocated %v times per call, want 0", allocs)
	}
}

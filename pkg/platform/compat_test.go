package platform

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCompatExpand follows containerd's platform vectors (github.com/containerd/platforms,
// compare.go): an amd64 host also runs 386 images, an arm64 host arm/v8, v7, v6 and v5.
func TestCompatExpand(t *testing.T) {
	linux386 := Platform{OS: "linux", Architecture: "386"}
	arm5 := Platform{OS: "linux", Architecture: "arm", Variant: "v5"}
	arm8 := Platform{OS: "linux", Architecture: "arm", Variant: "v8"}
	both := NewCompat(AMD64Runs386, ARM64RunsARM)
	tests := []struct {
		name   string
		compat Compat
		in     Set
		want   Set
	}{
		{"default applies no rule", Compat{}, NewSet(linux386, linuxARMv7), NewSet(linux386, linuxARMv7)},
		{"386 on amd64", NewCompat(AMD64Runs386), NewSet(linux386), NewSet(linux386, linuxAMD64)},
		{"386 rule leaves arm alone", NewCompat(AMD64Runs386), NewSet(linuxARMv7), NewSet(linuxARMv7)},
		{"arm/v7 on arm64", NewCompat(ARM64RunsARM), NewSet(linuxARMv7), NewSet(linuxARMv7, linuxARM64)},
		{"arm/v5 on arm64", both, NewSet(arm5), NewSet(arm5, linuxARM64)},
		{"arm/v8 on arm64", both, NewSet(arm8), NewSet(arm8, linuxARM64)},
		{"arm64 rule leaves 386 alone", NewCompat(ARM64RunsARM), NewSet(linux386), NewSet(linux386)},
		{"windows 386 on amd64 keeps the build", both,
			NewSet(Platform{OS: "windows", Architecture: "386", OSVersion: "10.0.20348.1"}),
			NewSet(Platform{OS: "windows", Architecture: "386", OSVersion: "10.0.20348.1"}, Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.1"})},
		{"Any stays Any", both, Any(), Any()},
		{"empty stays empty", both, NewSet(), NewSet()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.compat.Expand(tc.in)
			if diff := cmp.Diff(tc.want.Platforms(), got.Platforms()); diff != "" || got.IsAny() != tc.want.IsAny() {
				t.Errorf("Expand(%v) = %v (any %v), want any %v (-want,+got):\n%s", tc.in, got, got.IsAny(), tc.want.IsAny(), diff)
			}
		})
	}
}

// TestCompatIntersect: an arm/v7-only image and an arm64-only image run together on arm64
// nodes when the rule is on, and nowhere when it is off.
func TestCompatIntersect(t *testing.T) {
	armOnly, arm64Only := NewSet(linuxARMv7), NewSet(linuxARM64)
	arm64Node := NodePlatform{OS: "linux", Architecture: "arm64"}
	for _, tc := range []struct {
		name   string
		compat Compat
		want   bool
	}{
		{"rule off", Compat{}, false},
		{"rule on", NewCompat(ARM64RunsARM), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.compat.Expand(armOnly).Intersect(tc.compat.Expand(arm64Only)).MatchesNode(arm64Node)
			if got != tc.want {
				t.Errorf("MatchesNode(arm64) = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCompatRule(t *testing.T) {
	both := NewCompat(AMD64Runs386, ARM64RunsARM)
	amd64Node := NodePlatform{OS: "linux", Architecture: "amd64"}
	arm64Node := NodePlatform{OS: "linux", Architecture: "arm64"}
	type result struct {
		Rule string
		OK   bool
	}
	for _, tc := range []struct {
		name   string
		compat Compat
		p      Platform
		node   NodePlatform
		want   result
	}{
		{"direct match", both, linuxAMD64, amd64Node, result{"", true}},
		{"386 on amd64", both, Platform{OS: "linux", Architecture: "386"}, amd64Node, result{AMD64Runs386, true}},
		{"arm/v7 on arm64", both, linuxARMv7, arm64Node, result{ARM64RunsARM, true}},
		{"arm/v7 on arm64, rule off", Compat{}, linuxARMv7, arm64Node, result{"", false}},
		{"arm/v7 on amd64", both, linuxARMv7, amd64Node, result{"", false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rule, ok := tc.compat.Rule(tc.p, tc.node)
			if diff := cmp.Diff(tc.want, result{rule, ok}); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// TestCompatParseList: configured platforms (fallbackPlatforms) are widened like an image's,
// following containerd's vectors (an arm64 host also runs arm/v8 to arm/v5, an amd64 host
// 386), so a fallback of linux/arm/v7 admits the arm64 nodes an arm/v7 image would.
func TestCompatParseList(t *testing.T) {
	for _, tc := range []struct {
		name    string
		compat  Compat
		elems   []string
		want    string
		wantErr bool
	}{
		{name: "rule off: as written", elems: []string{"linux/arm/v7", "linux/386"}, want: "linux/386,linux/arm/v7"},
		{name: "arm64 rule widens arm/v7", compat: NewCompat(ARM64RunsARM), elems: []string{"linux/arm/v7"}, want: "linux/arm/v7,linux/arm64"},
		{name: "amd64 rule widens 386", compat: NewCompat(AMD64Runs386), elems: []string{"linux/386", "linux/s390x"}, want: "linux/386,linux/amd64,linux/s390x"},
		{name: "elements are normalised first", compat: NewCompat(ARM64RunsARM), elems: []string{"linux/armhf", " linux/aarch64 "}, want: "linux/arm/v7,linux/arm64"},
		{name: "invalid element", compat: NewCompat(ARM64RunsARM), elems: []string{"linux/arm64", "arm64"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.compat.ParseList(tc.elems)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseList(%q) error = %v, want error %v", tc.elems, err, tc.wantErr)
			}
			if tc.wantErr {
				if !got.IsEmpty() {
					t.Errorf("on error ParseList = %v, want the empty set (admits nothing)", got)
				}
				return
			}
			if got.String() != tc.want {
				t.Errorf("ParseList(%q) = %s, want %s", tc.elems, got, tc.want)
			}
		})
	}
}

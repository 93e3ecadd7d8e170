package resolver

import (
	"reflect"
	"testing"

	"github.com/archfilter/archfilter/pkg/platform"
)

// Equal sets are one Set; sets that differ anywhere, including
// os.version and features that Set.String leaves out, stay apart.
func TestSetInterner(t *testing.T) {
	amd := platform.Platform{OS: "linux", Architecture: "amd64"}
	arm := platform.Platform{OS: "linux", Architecture: "arm64"}
	win2019 := platform.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1"}
	win2022 := platform.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.1"}
	featured := platform.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1", OSFeatures: []string{"win32k"}}

	i := newSetInterner()
	first := i.intern(platform.NewSet(amd, arm))
	again := i.intern(platform.NewSet(arm, amd))
	if first != again {
		t.Error("an equal set was not shared")
	}
	for name, pair := range map[string][2]platform.Set{
		"os.version": {platform.NewSet(win2019), platform.NewSet(win2022)},
		"features":   {platform.NewSet(win2019), platform.NewSet(featured)},
	} {
		a, b := i.intern(pair[0]), i.intern(pair[1])
		if a == b || sameBacking(*a, *b) {
			t.Errorf("sets differing in %s were merged: %v and %v", name, a.Platforms(), b.Platforms())
		}
		if got := b.Platforms(); got[0].OSVersion != pair[1].Platforms()[0].OSVersion || len(got[0].OSFeatures) != len(pair[1].Platforms()[0].OSFeatures) {
			t.Errorf("%s: interned %v, want %v", name, got, pair[1].Platforms())
		}
	}
	if got := i.intern(platform.Any()); !got.IsAny() {
		t.Errorf("Any interned as %v", got)
	}
	if got := i.intern(platform.NewSet()); !got.IsEmpty() {
		t.Errorf("the empty set interned as %v", got)
	}
}

// sameBacking reports whether two sets share their platforms' storage.
func sameBacking(a, b platform.Set) bool {
	pa := reflect.ValueOf(a).FieldByName("platforms").Pointer()
	return pa != 0 && pa == reflect.ValueOf(b).FieldByName("platforms").Pointer()
}

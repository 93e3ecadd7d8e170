package spelling

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"arm64", "arm64", 0},
		{"arm46", "arm64", 1}, // a swap is one edit
		{"platfroms", "platforms", 1},
		{"amd64", "arm64", 2},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment, not unrestricted Damerau (2)
		{"linüx", "linux", 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	arches := []string{"amd64", "arm64", "arm", "386", "ppc64le", "s390x", "riscv64"}
	for _, tc := range []struct {
		name  string
		word  string
		cands []string
		want  string
		ok    bool
	}{
		{name: "swap", word: "arm46", cands: arches, want: "arm64", ok: true},
		{name: "tie goes to the first listed", word: "amr64", cands: []string{"arm64", "amd64"}, want: "arm64", ok: true},
		{name: "a swap in a long word", word: "s309x", cands: arches, want: "s390x", ok: true},
		{name: "short words allow one edit", word: "368", cands: arches, want: "386", ok: true},
		{name: "short word, two edits: none", word: "amd", cands: arches, ok: false},
		{name: "far from everything", word: "sparc", cands: arches, ok: false},
		{name: "exact", word: "arm", cands: arches, want: "arm", ok: true},
		{name: "never the whole word", word: "x", cands: []string{"y"}, ok: false},
		{name: "no candidates", word: "arm64", ok: false},
		{name: "keys", word: "archfilter.io/platfroms", cands: []string{"archfilter.io/skip", "archfilter.io/platforms", "archfilter.io/preferred-platforms"}, want: "archfilter.io/platforms", ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Nearest(tc.word, tc.cands)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("Nearest(%q) = %q, %v; want %q, %v", tc.word, got, ok, tc.want, tc.ok)
			}
		})
	}
}

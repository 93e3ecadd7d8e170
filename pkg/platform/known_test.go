package platform

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReviewList(t *testing.T) {
	tests := []struct {
		name string
		list string
		// want is what DescribeList says; "" for a list without problems.
		want       string
		syntax     bool
		matchNoode bool
	}{
		{name: "fine", list: "linux/amd64, linux/arm64,windows/amd64,linux/arm/v7,linux/riscv64"},
		{name: "normalised spellings are fine", list: "Linux/x86_64,linux/aarch64,linux/arm64/v8,linux/amd64/v3,linux/armhf"},
		{name: "any", list: "*"},
		{name: "arch alone", list: "arm64", want: "want os/arch[/variant]; did you mean linux/arm64?", syntax: true, matchNoode: true},
		{name: "arch alone, spelt as a runtime does", list: "aarch64", want: "want os/arch[/variant]; did you mean linux/arm64?", syntax: true, matchNoode: true},
		{name: "os alone", list: "linux", want: "want os/arch[/variant], e.g. linux/arm64", syntax: true, matchNoode: true},
		{name: "empty element", list: "linux/amd64,,arm64", want: `element 2 is empty; element 3 "arm64": want os/arch[/variant]; did you mean linux/amd64,linux/arm64?`, syntax: true, matchNoode: true},
		{name: "trailing comma", list: "linux/amd64,", want: "element 2 is empty; want os/arch[/variant] separated by commas; did you mean linux/amd64?", syntax: true, matchNoode: true},
		{name: "empty", list: "", want: "empty; want os/arch[/variant] separated by commas, e.g. linux/amd64,linux/arm64", syntax: true, matchNoode: true},
		{name: "semicolons", list: "linux/amd64;linux/arm64", want: `architecture "amd64;linux" contains ';', want only letters, digits, '.', '_' and '-'; want os/arch[/variant] separated by commas; did you mean linux/amd64,linux/arm64?`, syntax: true, matchNoode: true},
		{name: "spaces between, a dash within", list: "linux-amd64 linux/arm64", want: `os "linux-amd64 linux" contains ' ', want only letters, digits, '.', '_' and '-'; want os/arch[/variant] separated by commas; did you mean linux/amd64,linux/arm64?`, syntax: true, matchNoode: true},
		{name: "dash", list: "linux-arm64", want: "want os/arch[/variant]; did you mean linux/arm64?", syntax: true, matchNoode: true},
		{name: "space inside", list: "linux/ arm64", want: `architecture " arm64" contains ' ', want only letters, digits, '.', '_' and '-'; want os/arch[/variant] separated by commas; did you mean linux/arm64?`, syntax: true, matchNoode: true},
		{name: "too many parts", list: "linux/amd64/v7/x", want: "4 '/'-separated parts, want os/arch[/variant], e.g. linux/arm64", syntax: true, matchNoode: true},
		{name: "unknown arch", list: "linux/arm46", want: `no container runtime knows the architecture "arm46"; did you mean linux/arm64?`, matchNoode: true},
		{name: "unknown arch in a list", list: "linux/amd64,linux/arm46", want: `element 2 "linux/arm46": no container runtime knows the architecture "arm46"; did you mean linux/amd64,linux/arm64?`, matchNoode: true},
		{name: "unknown arch, nothing near", list: "linux/quantum", want: `no container runtime knows the architecture "quantum"`, matchNoode: true},
		{name: "unknown os", list: "linx/amd64", want: `no container runtime knows the os "linx"; did you mean linux/amd64?`, matchNoode: true},
		{name: "swapped", list: "arm64/linux", want: `os "arm64" is an architecture and architecture "linux" an os; did you mean linux/arm64?`, matchNoode: true},
		{name: "arch and variant without os", list: "arm/v7", want: `"arm/v7" is an architecture and its variant, want os/arch[/variant]; did you mean linux/arm/v7?`, matchNoode: true},
		{name: "unknown variant matches nodes", list: "linux/arm/v9", want: `arm has no variant "v9" (known: v7, v6, v8, v5); did you mean linux/arm/v7?`},
		{name: "unknown amd64 level", list: "linux/amd64/v5", want: `amd64 has no variant "v5" (known: v2, v3, v4); did you mean linux/amd64?`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DescribeList(tc.list)); diff != "" {
				t.Errorf("DescribeList(%q) (-want,+got):\n%s", tc.list, diff)
			}
			syntax, noNode := false, false
			for _, p := range ReviewList(tc.list) {
				syntax = syntax || p.Syntax
				noNode = noNode || p.MatchesNoNode
			}
			if syntax != tc.syntax || noNode != tc.matchNoode {
				t.Errorf("ReviewList(%q): syntax %v, matches no node %v; want %v, %v", tc.list, syntax, noNode, tc.syntax, tc.matchNoode)
			}
			// A syntax problem is exactly what ParseList refuses.
			if _, err := ParseList(tc.list); (err != nil) != syntax {
				t.Errorf("ParseList(%q) error %v, but ReviewList says syntax %v", tc.list, err, syntax)
			}
			// A suggestion is a list ReviewList finds nothing wrong with.
			if fixed, ok := SuggestList(tc.list, ReviewList(tc.list)); ok && len(ReviewList(tc.list)) > 0 {
				if again := ReviewList(fixed); len(again) > 0 {
					t.Errorf("the suggestion %q for %q has problems: %v", fixed, tc.list, again)
				}
			}
		})
	}
}

func TestKnown(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64", "arm", "386", "ppc64le", "s390x", "riscv64", "mips64le", "loong64", "wasm"} {
		if !KnownArchitecture(arch) {
			t.Errorf("KnownArchitecture(%q) = false", arch)
		}
	}
	for _, os := range []string{"linux", "windows", "darwin", "freebsd", "wasip1"} {
		if !KnownOS(os) {
			t.Errorf("KnownOS(%q) = false", os)
		}
	}
	for _, bad := range []string{"arm46", "x86_64", "aarch64", "", "AMD64"} {
		if KnownArchitecture(bad) {
			t.Errorf("KnownArchitecture(%q) = true: the table holds normalised values only", bad)
		}
	}
	// Every value the table knows is one Normalize keeps: the table and the
	// normalisation agree.
	for _, arch := range knownArchitectures {
		if got := Normalize(Platform{OS: "linux", Architecture: arch}).Architecture; got != arch {
			t.Errorf("Normalize changes the known architecture %q to %q", arch, got)
		}
	}
}

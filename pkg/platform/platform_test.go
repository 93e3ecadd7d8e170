package platform

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   Platform
		want Platform
	}{
		{
			name: "canonical value unchanged",
			in:   Platform{OS: "linux", Architecture: "amd64"},
			want: Platform{OS: "linux", Architecture: "amd64"},
		},
		{
			name: "everything lower-cased",
			in:   Platform{OS: "Linux", Architecture: "PPC64LE", Variant: "Foo"},
			want: Platform{OS: "linux", Architecture: "ppc64le", Variant: "foo"},
		},
		{
			name: "macos is darwin",
			in:   Platform{OS: "macos", Architecture: "arm64"},
			want: Platform{OS: "darwin", Architecture: "arm64"},
		},
		{
			name: "MacOS is darwin",
			in:   Platform{OS: "MacOS", Architecture: "amd64"},
			want: Platform{OS: "darwin", Architecture: "amd64"},
		},
		{
			name: "x86_64 is amd64",
			in:   Platform{OS: "linux", Architecture: "x86_64"},
			want: Platform{OS: "linux", Architecture: "amd64"},
		},
		{
			name: "x86-64 is amd64",
			in:   Platform{OS: "linux", Architecture: "x86-64"},
			want: Platform{OS: "linux", Architecture: "amd64"},
		},
		{
			name: "X86_64 is amd64",
			in:   Platform{OS: "linux", Architecture: "X86_64"},
			want: Platform{OS: "linux", Architecture: "amd64"},
		},
		{
			name: "amd64/v1 is the baseline",
			in:   Platform{OS: "linux", Architecture: "amd64", Variant: "v1"},
			want: Platform{OS: "linux", Architecture: "amd64"},
		},
		{
			name: "amd64/v3 keeps its variant",
			in:   Platform{OS: "linux", Architecture: "x86_64", Variant: "V3"},
			want: Platform{OS: "linux", Architecture: "amd64", Variant: "v3"},
		},
		{
			name: "aarch64 is arm64 without variant",
			in:   Platform{OS: "linux", Architecture: "aarch64"},
			want: Platform{OS: "linux", Architecture: "arm64"},
		},
		{
			name: "arm64 unchanged",
			in:   Platform{OS: "linux", Architecture: "arm64"},
			want: Platform{OS: "linux", Architecture: "arm64"},
		},
		{
			name: "arm64/v8 is arm64",
			in:   Platform{OS: "linux", Architecture: "arm64", Variant: "v8"},
			want: Platform{OS: "linux", Architecture: "arm64"},
		},
		{
			name: "arm64/8 is arm64",
			in:   Platform{OS: "linux", Architecture: "arm64", Variant: "8"},
			want: Platform{OS: "linux", Architecture: "arm64"},
		},
		{
			name: "arm64/v8.0 is arm64",
			in:   Platform{OS: "linux", Architecture: "arm64", Variant: "v8.0"},
			want: Platform{OS: "linux", Architecture: "arm64"},
		},
		{
			name: "aarch64/v8 is arm64",
			in:   Platform{OS: "linux", Architecture: "aarch64", Variant: "v8"},
			want: Platform{OS: "linux", Architecture: "arm64"},
		},
		{
			name: "arm64/9 is arm64/v9",
			in:   Platform{OS: "linux", Architecture: "arm64", Variant: "9"},
			want: Platform{OS: "linux", Architecture: "arm64", Variant: "v9"},
		},
		{
			name: "arm64/v8.2 keeps its variant",
			in:   Platform{OS: "linux", Architecture: "arm64", Variant: "v8.2"},
			want: Platform{OS: "linux", Architecture: "arm64", Variant: "v8.2"},
		},
		{
			name: "armhf is arm/v7",
			in:   Platform{OS: "linux", Architecture: "armhf"},
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v7"},
		},
		{
			name: "armel is arm/v6",
			in:   Platform{OS: "linux", Architecture: "armel"},
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v6"},
		},
		{
			name: "arm without variant is arm/v7",
			in:   Platform{OS: "linux", Architecture: "arm"},
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v7"},
		},
		{
			name: "arm/7 is arm/v7",
			in:   Platform{OS: "linux", Architecture: "arm", Variant: "7"},
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v7"},
		},
		{
			name: "arm/v7 unchanged",
			in:   Platform{OS: "linux", Architecture: "arm", Variant: "v7"},
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v7"},
		},
		{
			name: "arm/V7 is arm/v7",
			in:   Platform{OS: "linux", Architecture: "ARM", Variant: "V7"},
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v7"},
		},
		{
			name: "arm/6 is arm/v6",
			in:   Platform{OS: "linux", Architecture: "arm", Variant: "6"},
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v6"},
		},
		{
			name: "arm/5 is arm/v5",
			in:   Platform{OS: "linux", Architecture: "arm", Variant: "5"},
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v5"},
		},
		{
			name: "arm/8 is arm/v8",
			in:   Platform{OS: "linux", Architecture: "arm", Variant: "8"},
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v8"},
		},
		{
			name: "arm/v7.0 is arm/v7",
			in:   Platform{OS: "linux", Architecture: "arm", Variant: "v7.0"},
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v7"},
		},
		{
			name: "i386 is 386",
			in:   Platform{OS: "linux", Architecture: "i386"},
			want: Platform{OS: "linux", Architecture: "386"},
		},
		{
			name: "i486 is 386",
			in:   Platform{OS: "linux", Architecture: "i486"},
			want: Platform{OS: "linux", Architecture: "386"},
		},
		{
			name: "i586 is 386",
			in:   Platform{OS: "linux", Architecture: "i586"},
			want: Platform{OS: "linux", Architecture: "386"},
		},
		{
			name: "i686 is 386",
			in:   Platform{OS: "linux", Architecture: "i686"},
			want: Platform{OS: "linux", Architecture: "386"},
		},
		{
			name: "x86 is 386",
			in:   Platform{OS: "linux", Architecture: "x86"},
			want: Platform{OS: "linux", Architecture: "386"},
		},
		{
			name: "riscv64 passes through",
			in:   Platform{OS: "linux", Architecture: "riscv64"},
			want: Platform{OS: "linux", Architecture: "riscv64"},
		},
		{
			name: "loong64 passes through",
			in:   Platform{OS: "linux", Architecture: "loong64"},
			want: Platform{OS: "linux", Architecture: "loong64"},
		},
		{
			name: "mips64le passes through",
			in:   Platform{OS: "linux", Architecture: "mips64le"},
			want: Platform{OS: "linux", Architecture: "mips64le"},
		},
		{
			name: "s390x passes through",
			in:   Platform{OS: "linux", Architecture: "s390x"},
			want: Platform{OS: "linux", Architecture: "s390x"},
		},
		{
			name: "wasm passes through",
			in:   Platform{OS: "wasip1", Architecture: "wasm"},
			want: Platform{OS: "wasip1", Architecture: "wasm"},
		},
		{
			name: "numeric variant of an unknown architecture is not prefixed",
			in:   Platform{OS: "linux", Architecture: "riscv64", Variant: "7"},
			want: Platform{OS: "linux", Architecture: "riscv64", Variant: "7"},
		},
		{
			name: "windows os.version kept, features sorted and de-duplicated",
			in:   Platform{OS: "Windows", Architecture: "AMD64", OSVersion: "10.0.17763.1234", OSFeatures: []string{"win32k", "b", "win32k"}},
			want: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1234", OSFeatures: []string{"b", "win32k"}},
		},
		{
			name: "empty features are nil",
			in:   Platform{OS: "linux", Architecture: "amd64", OSFeatures: []string{}},
			want: Platform{OS: "linux", Architecture: "amd64"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Normalize(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Normalize(%+v) (-want,+got):\n%s", tc.in, diff)
			}
			if diff := cmp.Diff(got, Normalize(got)); diff != "" {
				t.Errorf("Normalize is not idempotent (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeDoesNotModifyFeatures(t *testing.T) {
	features := []string{"z", "a"}
	Normalize(Platform{OS: "windows", Architecture: "amd64", OSFeatures: features})
	if diff := cmp.Diff([]string{"z", "a"}, features); diff != "" {
		t.Errorf("caller's OSFeatures changed (-want,+got):\n%s", diff)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Platform
		wantErr string
	}{
		{
			name: "os/arch",
			in:   "linux/amd64",
			want: Platform{OS: "linux", Architecture: "amd64"},
		},
		{
			name: "os/arch/variant",
			in:   "linux/arm/v6",
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v6"},
		},
		{
			name: "normalised",
			in:   "Linux/AArch64/8",
			want: Platform{OS: "linux", Architecture: "arm64"},
		},
		{
			name: "armhf",
			in:   "linux/armhf",
			want: Platform{OS: "linux", Architecture: "arm", Variant: "v7"},
		},
		{
			name: "windows",
			in:   "windows/x86_64",
			want: Platform{OS: "windows", Architecture: "amd64"},
		},
		{
			name: "riscv64",
			in:   "linux/riscv64",
			want: Platform{OS: "linux", Architecture: "riscv64"},
		},
		{
			name: "loong64",
			in:   "linux/loong64",
			want: Platform{OS: "linux", Architecture: "loong64"},
		},
		{
			name: "mips64le",
			in:   "linux/mips64le",
			want: Platform{OS: "linux", Architecture: "mips64le"},
		},
		{
			name: "made-up architecture",
			in:   "plan9/quantum_7-x.1",
			want: Platform{OS: "plan9", Architecture: "quantum_7-x.1"},
		},
		{
			name:    "empty",
			in:      "",
			wantErr: `invalid platform "": empty, want os/arch[/variant]`,
		},
		{
			name:    "os only",
			in:      "linux",
			wantErr: `invalid platform "linux": want os/arch[/variant]`,
		},
		{
			name:    "arch only",
			in:      "arm64",
			wantErr: `invalid platform "arm64": want os/arch[/variant]`,
		},
		{
			name:    "empty architecture",
			in:      "linux/",
			wantErr: `invalid platform "linux/": empty architecture`,
		},
		{
			name:    "empty os",
			in:      "/amd64",
			wantErr: `invalid platform "/amd64": empty os`,
		},
		{
			name:    "empty variant",
			in:      "linux/arm/",
			wantErr: `invalid platform "linux/arm/": empty variant`,
		},
		{
			name:    "too many parts",
			in:      "linux/amd64/v7/extra",
			wantErr: `invalid platform "linux/amd64/v7/extra": 4 '/'-separated parts, want os/arch[/variant]`,
		},
		{
			name:    "only a slash",
			in:      "/",
			wantErr: `invalid platform "/": empty os`,
		},
		{
			name:    "space inside",
			in:      "linux/amd 64",
			wantErr: `invalid platform "linux/amd 64": architecture "amd 64" contains ' ', want only letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "space after slash",
			in:      "linux/ amd64",
			wantErr: `invalid platform "linux/ amd64": architecture " amd64" contains ' ', want only letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "leading space",
			in:      " linux/amd64",
			wantErr: `invalid platform " linux/amd64": os " linux" contains ' ', want only letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "trailing newline",
			in:      "linux/amd64\n",
			wantErr: `invalid platform "linux/amd64\n": architecture "amd64\n" contains '\n', want only letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "comma",
			in:      "linux/amd64,linux/arm64",
			wantErr: `invalid platform "linux/amd64,linux/arm64": architecture "amd64,linux" contains ',', want only letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "colon in variant",
			in:      "linux/arm/v7:x",
			wantErr: `invalid platform "linux/arm/v7:x": variant "v7:x" contains ':', want only letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "non-ASCII",
			in:      "linüx/amd64",
			wantErr: `invalid platform "linüx/amd64": os "linüx" contains 'ü', want only letters, digits, '.', '_' and '-'`,
		},
		{
			name:    "invalid UTF-8",
			in:      "linux/\xffamd64",
			wantErr: `invalid platform "linux/\xffamd64": architecture "\xffamd64" contains '�', want only letters, digits, '.', '_' and '-'`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse(%q) = %+v, want error %q", tc.in, got, tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
					t.Errorf("Parse(%q) error (-want,+got):\n%s", tc.in, diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q) unexpected error: %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want,+got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestPlatformString(t *testing.T) {
	tests := []struct {
		name string
		in   Platform
		want string
	}{
		{
			name: "os/arch",
			in:   Platform{OS: "linux", Architecture: "arm64"},
			want: "linux/arm64",
		},
		{
			name: "variant",
			in:   Platform{OS: "linux", Architecture: "arm", Variant: "v7"},
			want: "linux/arm/v7",
		},
		{
			name: "os.version and features left out",
			in:   Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1234", OSFeatures: []string{"win32k"}},
			want: "windows/amd64",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.String()); diff != "" {
				t.Errorf("String() (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPlatformMatches(t *testing.T) {
	nodeLinuxAMD64 := NodePlatform{OS: "linux", Architecture: "amd64"}
	nodeLinuxARM := NodePlatform{OS: "linux", Architecture: "arm"}
	nodeLTSC2019 := NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.17763"}
	nodeLTSC2022 := NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.20348"}
	nodeWindowsNoBuild := NodePlatform{OS: "windows", Architecture: "amd64"}

	tests := []struct {
		name     string
		platform Platform
		node     NodePlatform
		want     bool
	}{
		{
			name:     "same os and arch",
			platform: Platform{OS: "linux", Architecture: "amd64"},
			node:     nodeLinuxAMD64,
			want:     true,
		},
		{
			name:     "different arch",
			platform: Platform{OS: "linux", Architecture: "arm64"},
			node:     nodeLinuxAMD64,
			want:     false,
		},
		{
			name:     "different os",
			platform: Platform{OS: "windows", Architecture: "amd64"},
			node:     nodeLinuxAMD64,
			want:     false,
		},
		{
			name:     "linux image on windows node",
			platform: Platform{OS: "linux", Architecture: "amd64"},
			node:     nodeWindowsNoBuild,
			want:     false,
		},
		{
			name:     "arm/v7 image on arm node",
			platform: Platform{OS: "linux", Architecture: "arm", Variant: "v7"},
			node:     nodeLinuxARM,
			want:     true,
		},
		{
			name:     "variant policy: arm/v6-only image on arm node of unknown variant",
			platform: Platform{OS: "linux", Architecture: "arm", Variant: "v6"},
			node:     nodeLinuxARM,
			want:     true,
		},
		{
			name:     "variant policy: amd64/v3 image on amd64 node",
			platform: Platform{OS: "linux", Architecture: "amd64", Variant: "v3"},
			node:     nodeLinuxAMD64,
			want:     true,
		},
		{
			name:     "variant does not make arm match arm64",
			platform: Platform{OS: "linux", Architecture: "arm", Variant: "v8"},
			node:     NodePlatform{OS: "linux", Architecture: "arm64"},
			want:     false,
		},
		{
			name:     "windows revision ignored against node build",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1234"},
			node:     nodeLTSC2019,
			want:     true,
		},
		{
			name:     "windows same build without revision",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763"},
			node:     nodeLTSC2019,
			want:     true,
		},
		{
			name:     "windows different build",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.2113"},
			node:     nodeLTSC2019,
			want:     false,
		},
		{
			name:     "windows 2019 image on 2022 node",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1234"},
			node:     nodeLTSC2022,
			want:     false,
		},
		// Microsoft's version-compatibility rules, as containerd's Windows matcher
		// (checkWindowsHostAndContainerCompat) applies them: from Windows Server 2022 on, a
		// host runs images of builds from 10.0.20348 up to its own.
		{
			name:     "windows 2022 image on Windows Server 23H2 node",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.2113"},
			node:     NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.25398"},
			want:     true,
		},
		{
			name:     "windows 2022 image on Windows 11 node",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.2113"},
			node:     NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.22621"},
			want:     true,
		},
		{
			name:     "windows 2022 image on 2025 node",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.2113"},
			node:     NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.26100"},
			want:     true,
		},
		{
			name:     "windows 2025 image on 2022 node (newer than the host)",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.26100.1742"},
			node:     nodeLTSC2022,
			want:     false,
		},
		{
			name:     "windows 2019 image on 2025 node (below 20348: exact build)",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1234"},
			node:     NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.26100"},
			want:     false,
		},
		{
			name:     "windows different major.minor",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "6.3.20348"},
			node:     NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.26100"},
			want:     false,
		},
		{
			name:     "windows unparsable versions must be equal",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.x"},
			node:     NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.x"},
			want:     true,
		},
		{
			name:     "windows build is not a prefix match",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.1776.1"},
			node:     nodeLTSC2019,
			want:     false,
		},
		{
			name:     "windows image without os.version matches any build",
			platform: Platform{OS: "windows", Architecture: "amd64"},
			node:     nodeLTSC2022,
			want:     true,
		},
		{
			name:     "windows node without build label matches any os.version",
			platform: Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.2113"},
			node:     nodeWindowsNoBuild,
			want:     true,
		},
		{
			name:     "windows build checked only for windows",
			platform: Platform{OS: "linux", Architecture: "amd64", OSVersion: "1.2.3"},
			node:     NodePlatform{OS: "linux", Architecture: "amd64", WindowsBuild: "10.0.17763"},
			want:     true,
		},
		{
			name:     "unknown node",
			platform: Platform{OS: "linux", Architecture: "amd64"},
			node:     NodePlatform{},
			want:     false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.platform.Matches(tc.node); got != tc.want {
				t.Errorf("%+v.Matches(%+v) = %v, want %v", tc.platform, tc.node, got, tc.want)
			}
		})
	}
}

func TestWindowsBuild(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{in: "10.0.17763.1234", want: "10.0.17763"},
		{in: "10.0.17763", want: "10.0.17763"},
		{in: "10.0", want: "10.0"},
		{in: "", want: ""},
		{in: "10.0.17763.1234.5", want: "10.0.17763"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, windowsBuild(tc.in)); diff != "" {
				t.Errorf("windowsBuild(%q) (-want,+got):\n%s", tc.in, diff)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"linux/amd64", "linux/arm64/v8", "linux/arm/v7", "linux/arm", "linux/armhf", "linux/armel",
		"Linux/AArch64/8", "linux/x86_64/v1", "linux/i686", "darwin/arm64", "macos/amd64",
		"windows/amd64", "linux/riscv64", "linux/loong64", "wasip1/wasm", "linux/arm64/v8.0",
		"linux/arm/7.0", "", "linux", "linux/", "/amd64", "linux/amd64/v7/extra", "linux/ amd64",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err == nil {
			again, err := Parse(p.String())
			if err != nil {
				t.Fatalf("Parse(%q) = %+v, but Parse(%q) failed: %v", s, p, p.String(), err)
			}
			if diff := cmp.Diff(p, again); diff != "" {
				t.Fatalf("Parse(%q) does not round-trip through %q (-want,+got):\n%s", s, p.String(), diff)
			}
			if diff := cmp.Diff(p, Normalize(p)); diff != "" {
				t.Fatalf("Parse(%q) is not normalised (-want,+got):\n%s", s, diff)
			}
		}

		// Normalize must be idempotent on anything an image config can carry, not only on
		// what Parse accepts.
		var raw Platform
		raw.OS, raw.Architecture, _ = strings.Cut(s, "/")
		raw.Architecture, raw.Variant, _ = strings.Cut(raw.Architecture, "/")
		once := Normalize(raw)
		if diff := cmp.Diff(once, Normalize(once)); diff != "" {
			t.Fatalf("Normalize(%+v) is not idempotent (-want,+got):\n%s", raw, diff)
		}
	})
}

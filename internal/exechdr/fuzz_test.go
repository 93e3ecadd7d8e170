package exechdr

import (
	"bytes"
	"debug/macho"
	"debug/pe"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archfilter/archfilter/internal/exechdr/exechdrtest"
	"github.com/archfilter/archfilter/internal/fuzzcheck"
	"github.com/archfilter/archfilter/pkg/platform"
)

// identifyAlloc bounds what one Identify call allocates, whatever the input's length:
// Identify looks at a fixed-size header (a "#!" line is cut at maxShebang bytes), so its
// cost is constant. Measured: under 3 KiB (a 256-byte "#!" line of 130 words).
const identifyAlloc = 16 * fuzzcheck.KiB

// FuzzIdentify feeds Identify any file prefix, as layerfs hands it the first bytes of an
// image's entrypoint. Besides the cost limits (constant memory, whatever the length), it
// checks that:
//   - the input is not modified;
//   - a shorter prefix that already gave a definite answer gives the same answer as the
//     longer one (reading more of the file never changes a result; the answers that are
//     not definite: errors, "unknown" for fewer than 8 bytes, a "#!" line not ended
//     within the prefix and shorter than the kernel's maxShebang);
//   - the header is consistent: Format is one of the five, String names it, the OS is
//     the format's, Arch is a normalised architecture (what the --deep check compares
//     with a manifest's platform, once normalised), a script's interpreter is one word
//     and its line fits the kernel's maxShebang, EnvCommand is one of the script's
//     arguments, and nothing but a script has one.
func FuzzIdentify(f *testing.F) {
	for _, goarch := range []string{"amd64", "386", "arm64", "arm", "ppc64le", "ppc64", "s390x", "riscv64", "mips64le", "mips", "loong64"} {
		f.Add(exechdrtest.ELF(goarch), uint16(0))
	}
	for _, m := range []uint16{pe.IMAGE_FILE_MACHINE_AMD64, pe.IMAGE_FILE_MACHINE_ARM64, pe.IMAGE_FILE_MACHINE_I386, pe.IMAGE_FILE_MACHINE_ARMNT, 0x1234} {
		f.Add(exechdrtest.PE(m), uint16(0x84))
	}
	for _, cpu := range []macho.Cpu{macho.CpuArm64, macho.CpuAmd64, macho.Cpu386, macho.CpuArm, macho.CpuPpc64, macho.CpuPpc} {
		f.Add(exechdrtest.MachO(cpu), uint16(4))
	}
	for _, b := range [][]byte{
		{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2},  // fat Mach-O
		{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 52}, // Java class
		[]byte("#!/bin/sh\necho hi\n"),
		[]byte("#! /usr/bin/env python3\r\nprint()\n"),
		[]byte("#!/usr/bin/env -S deno run\n"),
		[]byte("#!/usr/bin/env -S FOO=1 node --x\n"),
		[]byte("#!/usr/bin/env\n"),
		[]byte("#!\n"),
		[]byte("#!/bin/" + strings.Repeat("x", 300) + "\n"),
		append([]byte("MZ"), make([]byte, 0x40)...),                                    // a DOS program
		exechdrtest.ELF("amd64")[:10],                                                  // truncated
		append(append([]byte{}, exechdrtest.ELF("amd64")[:5]...), make([]byte, 20)...), // bad byte order
		exechdrtest.PE(pe.IMAGE_FILE_MACHINE_AMD64)[:0x40],                             // PE beyond the prefix
		[]byte("hello world\n"),
		nil,
	} {
		f.Add(b, uint16(len(b)/2))
	}
	// A real linker's output: the test binary's own header.
	if exe, err := os.Executable(); err == nil {
		if b, err := os.ReadFile(exe); err == nil && len(b) > PrefixSize {
			f.Add(b[:PrefixSize], uint16(64))
		}
	}

	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		orig := bytes.Clone(b)
		var (
			h   Header
			err error
		)
		fuzzcheck.Within(t, "exechdr.Identify", fuzzcheck.Limits{Alloc: identifyAlloc}, func() {
			h, err = Identify(b)
		})
		if !bytes.Equal(b, orig) {
			t.Fatalf("Identify modified its input")
		}
		if err == nil {
			checkHeader(t, b, h)
		}

		for _, n := range []int{int(cut), 4, 8, 20, 0x40, maxShebang, PrefixSize, len(b) / 2} {
			if n >= len(b) {
				continue
			}
			short, serr := Identify(b[:n])
			if serr != nil || !definite(b[:n], short) {
				continue
			}
			if err != nil {
				t.Fatalf("Identify(first %d bytes) = %+v, but the %d bytes fail: %v", n, short, len(b), err)
			}
			if diff := cmp.Diff(short, h); diff != "" {
				t.Fatalf("Identify(first %d bytes) and Identify(all %d bytes) differ (-short,+all):\n%s", n, len(b), diff)
			}
		}
	})
}

// definite reports whether h, identified from prefix, is an answer more bytes of the same
// file cannot change.
func definite(prefix []byte, h Header) bool {
	switch h.Format {
	case Unknown:
		// Fewer than 8 bytes may yet be a Mach-O header; "MZ" with a DOS header
		// whose PE offset lies beyond them has failed, not returned Unknown.
		return len(prefix) >= 8
	case Script:
		// The kernel reads at most maxShebang bytes of the "#!" line.
		return len(prefix) >= maxShebang || bytes.IndexByte(prefix, '\n') >= 0
	}
	return true
}

// checkHeader checks what Identify(b) returned without an error.
func checkHeader(t *testing.T, b []byte, h Header) {
	t.Helper()
	s := h.String()
	switch h.Format {
	case ELF:
		if !bytes.HasPrefix(b, []byte("\x7fELF")) {
			t.Fatalf("%+v from a file without the ELF magic", h)
		}
		if strings.ContainsAny(h.OS, "/ \t\n") || h.OS != strings.ToLower(h.OS) {
			t.Fatalf("ELF OS %q is not one lower-case word", h.OS)
		}
	case PE:
		if h.OS != "windows" || !bytes.HasPrefix(b, []byte("MZ")) {
			t.Fatalf("PE header %+v: want OS windows and the MZ magic", h)
		}
	case MachO:
		if h.OS != "darwin" {
			t.Fatalf("Mach-O header %+v: want OS darwin", h)
		}
	case Script:
		if !bytes.HasPrefix(b, []byte("#!")) || h.Interpreter == "" || strings.ContainsFunc(h.Interpreter, isSpace) {
			t.Fatalf("script header %+v: want the #! magic and a one-word interpreter", h)
		}
		if n := len(h.Interpreter) + len(strings.Join(h.Args, " ")); n > maxShebang {
			t.Fatalf("script header %+v: %d bytes of #! line, more than the kernel reads (%d)", h, n, maxShebang)
		}
		if !strings.HasPrefix(s, "script for "+h.Interpreter) {
			t.Fatalf("String() = %q for %+v", s, h)
		}
	case Unknown:
		if s != "unrecognised file" {
			t.Fatalf("String() = %q for %+v", s, h)
		}
		if !cmp.Equal(h, Header{Format: Unknown}) {
			t.Fatalf("an unknown file has details: %+v", h)
		}
	default:
		t.Fatalf("Format %q is none of the five", h.Format)
	}
	if h.Format != Script && h.Format != Unknown && !strings.HasSuffix(s, " binary") {
		t.Fatalf("String() = %q for %+v", s, h)
	}
	if h.Format != Script && (h.Interpreter != "" || h.Args != nil) {
		t.Fatalf("%s header with an interpreter: %+v", h.Format, h)
	}
	if h.Arch != "" {
		osName := h.OS
		if osName == "" {
			osName = "linux"
		}
		if n := platform.Normalize(platform.Platform{OS: osName, Architecture: h.Arch}); n.Architecture != h.Arch {
			t.Fatalf("Arch %q of %+v is not normalised: %q", h.Arch, h, n.Architecture)
		}
	}
	if c := h.EnvCommand(); c != "" {
		if h.Format != Script || !strings.HasSuffix(h.Interpreter, "/env") {
			t.Fatalf("EnvCommand() = %q for %+v, not an env script", c, h)
		}
		if strings.HasPrefix(c, "-") || strings.Contains(c, "=") || strings.ContainsFunc(c, isSpace) {
			t.Fatalf("EnvCommand() = %q for %+v: an option, an assignment or several words", c, h)
		}
		if !strings.Contains(strings.Join(h.Args, " "), c) {
			t.Fatalf("EnvCommand() = %q is not among the arguments of %+v", c, h)
		}
	}
}

func isSpace(r rune) bool { return strings.TrimSpace(string(r)) == "" }

package exechdr_test

import (
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"os"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archfilter/archfilter/internal/exechdr"
	"github.com/archfilter/archfilter/internal/exechdr/exechdrtest"
)

func TestIdentify(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix []byte
		want   exechdr.Header
		str    string
	}{
		{"ELF amd64", exechdrtest.ELF("amd64"), exechdr.Header{Format: exechdr.ELF, Arch: "amd64", Machine: "x86-64"}, "x86-64 binary"},
		{"ELF arm64", exechdrtest.ELF("arm64"), exechdr.Header{Format: exechdr.ELF, Arch: "arm64", Machine: "AArch64"}, "AArch64 binary"},
		{"ELF arm", exechdrtest.ELF("arm"), exechdr.Header{Format: exechdr.ELF, Arch: "arm", Machine: "ARM"}, "ARM binary"},
		{"ELF 386", exechdrtest.ELF("386"), exechdr.Header{Format: exechdr.ELF, Arch: "386", Machine: "Intel 80386"}, ""},
		{"ELF ppc64le", exechdrtest.ELF("ppc64le"), exechdr.Header{Format: exechdr.ELF, Arch: "ppc64le", Machine: "PowerPC64 little-endian"}, ""},
		{"ELF ppc64", exechdrtest.ELF("ppc64"), exechdr.Header{Format: exechdr.ELF, Arch: "ppc64", Machine: "PowerPC64"}, ""},
		{"ELF s390x", exechdrtest.ELF("s390x"), exechdr.Header{Format: exechdr.ELF, Arch: "s390x", Machine: "IBM S/390"}, ""},
		{"ELF riscv64", exechdrtest.ELF("riscv64"), exechdr.Header{Format: exechdr.ELF, Arch: "riscv64", Machine: "RISC-V"}, ""},
		{"ELF mips64le", exechdrtest.ELF("mips64le"), exechdr.Header{Format: exechdr.ELF, Arch: "mips64le", Machine: "MIPS little-endian"}, ""},
		{"ELF mips", exechdrtest.ELF("mips"), exechdr.Header{Format: exechdr.ELF, Arch: "mips", Machine: "MIPS 32-bit"}, ""},
		{"ELF loong64", exechdrtest.ELF("loong64"), exechdr.Header{Format: exechdr.ELF, Arch: "loong64", Machine: "LoongArch"}, ""},
		{"PE amd64", exechdrtest.PE(pe.IMAGE_FILE_MACHINE_AMD64), exechdr.Header{Format: exechdr.PE, OS: "windows", Arch: "amd64", Machine: "x86-64"}, "x86-64 PE binary"},
		{"PE arm64", exechdrtest.PE(pe.IMAGE_FILE_MACHINE_ARM64), exechdr.Header{Format: exechdr.PE, OS: "windows", Arch: "arm64", Machine: "ARM64"}, ""},
		{"PE 386", exechdrtest.PE(pe.IMAGE_FILE_MACHINE_I386), exechdr.Header{Format: exechdr.PE, OS: "windows", Arch: "386", Machine: "Intel 386"}, ""},
		{"Mach-O arm64", exechdrtest.MachO(macho.CpuArm64), exechdr.Header{Format: exechdr.MachO, OS: "darwin", Arch: "arm64", Machine: "ARM64"}, "ARM64 Mach-O binary"},
		{"Mach-O amd64", exechdrtest.MachO(macho.CpuAmd64), exechdr.Header{Format: exechdr.MachO, OS: "darwin", Arch: "amd64", Machine: "x86-64"}, ""},
		{"fat Mach-O", []byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2}, exechdr.Header{Format: exechdr.MachO, OS: "darwin", Machine: "universal"}, ""},
		{"Java class", []byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 52}, exechdr.Header{Format: exechdr.Unknown}, "unrecognised file"},
		{"sh script", []byte("#!/bin/sh\necho hi\n"), exechdr.Header{Format: exechdr.Script, Interpreter: "/bin/sh"}, "script for /bin/sh"},
		{"env script", []byte("#! /usr/bin/env python3\r\nprint()\n"), exechdr.Header{Format: exechdr.Script, Interpreter: "/usr/bin/env", Args: []string{"python3"}}, ""},
		{"env -S", []byte("#!/usr/bin/env -S deno run\n"), exechdr.Header{Format: exechdr.Script, Interpreter: "/usr/bin/env", Args: []string{"-S", "deno", "run"}}, ""},
		{"DOS program", append([]byte("MZ"), make([]byte, 0x40)...), exechdr.Header{Format: exechdr.Unknown}, ""},
		{"text", []byte("hello world\n"), exechdr.Header{Format: exechdr.Unknown}, ""},
		{"empty", nil, exechdr.Header{Format: exechdr.Unknown}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := exechdr.Identify(tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
			if tc.str != "" && got.String() != tc.str {
				t.Errorf("String() = %q, want %q", got.String(), tc.str)
			}
		})
	}
}

func TestIdentifyErrors(t *testing.T) {
	farPE := exechdrtest.PE(pe.IMAGE_FILE_MACHINE_AMD64)[:0x40]
	// An offset that wraps an int on 32-bit platforms (it panicked there).
	wrapPE := append(append([]byte{}, farPE...), make([]byte, 8)...)
	binary.LittleEndian.PutUint32(wrapPE[0x3c:], 0x7ffffffe)
	for name, prefix := range map[string][]byte{
		"truncated ELF":      exechdrtest.ELF("amd64")[:10],
		"ELF bad byte order": append(append([]byte{}, exechdrtest.ELF("amd64")[:5]...), make([]byte, 20)...),
		"PE beyond prefix":   farPE,
		"PE offset wraps":    wrapPE,
		"empty #! line":      []byte("#!\n"),
	} {
		if h, err := exechdr.Identify(prefix); err == nil {
			t.Errorf("%s: got %+v, want an error", name, h)
		}
	}
}

func TestEnvCommand(t *testing.T) {
	for line, want := range map[string]string{
		"#!/usr/bin/env python3\n":           "python3",
		"#!/usr/bin/env -S FOO=1 node --x\n": "node",
		"#!/bin/sh\n":                        "",
		"#!/usr/bin/env\n":                   "",
	} {
		h, err := exechdr.Identify([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if got := h.EnvCommand(); got != want {
			t.Errorf("%q: EnvCommand() = %q, want %q", line, got, want)
		}
	}
}

// TestIdentifyOwnBinary reads the test binary's own header: a real linker's output.
func TestIdentifyOwnBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	b := make([]byte, exechdr.PrefixSize)
	n, _ := f.Read(b)
	h, err := exechdr.Identify(b[:n])
	if err != nil {
		t.Fatal(err)
	}
	if h.Format == exechdr.Unknown || h.Arch != runtime.GOARCH {
		t.Errorf("own binary: got %+v, want architecture %s", h, runtime.GOARCH)
	}
}

// Package exechdr tells, from the first bytes of an executable file, which platform it
// runs on: the machine of an ELF, PE or Mach-O header, or the interpreter of a "#!"
// script. It only reads the bytes it is given (PrefixSize is enough) and does no I/O.
package exechdr

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"fmt"
	"strings"
)

// PrefixSize is how many bytes of a file Identify needs at most: PE headers sit after a
// DOS stub whose length the file says, which linkers keep well under this.
const PrefixSize = 4096

// maxShebang is the longest "#!" line Linux reads (BINPRM_BUF_SIZE is 256 since 5.1).
const maxShebang = 256

// Format is what kind of executable a file is.
type Format string

const (
	ELF    Format = "ELF"
	PE     Format = "PE"
	MachO  Format = "Mach-O"
	Script Format = "script"
	// Unknown is none of the above: a text file without "#!", data, a truncated header.
	Unknown Format = "unknown"
)

// Header is what a file's first bytes say.
type Header struct {
	Format Format
	// OS and Arch are the platform the binary runs on, as in image manifests ("linux",
	// "amd64"); OS is "" for ELF, whose OS/ABI byte most toolchains leave at 0 (System
	// V) whatever the target. Arch is "" for a fat Mach-O and for scripts.
	OS, Arch string
	// Machine names the machine as its header does, for people: "x86-64", "AArch64".
	Machine string
	// Interpreter and Args are a script's "#!" line: "/usr/bin/env" and ["python3"].
	Interpreter string
	Args        []string
}

// String is the header for a finding: "x86-64 binary", "AArch64 Mach-O binary",
// "script for /bin/sh".
func (h Header) String() string {
	switch h.Format {
	case ELF:
		return h.Machine + " binary"
	case PE, MachO:
		return h.Machine + " " + string(h.Format) + " binary"
	case Script:
		return "script for " + strings.Join(append([]string{h.Interpreter}, h.Args...), " ")
	}
	return "unrecognised file"
}

// Identify reads the header at the start of prefix.
func Identify(prefix []byte) (Header, error) {
	switch {
	case bytes.HasPrefix(prefix, []byte(elf.ELFMAG)):
		return identifyELF(prefix)
	case bytes.HasPrefix(prefix, []byte("MZ")):
		return identifyPE(prefix)
	case bytes.HasPrefix(prefix, []byte("#!")):
		return identifyScript(prefix)
	case len(prefix) >= 8:
		if h, ok, err := identifyMachO(prefix); ok {
			return h, err
		}
	}
	return Header{Format: Unknown}, nil
}

type elfMachine struct {
	name string
	// arch by class (32, 64 bits), and whether it differs by byte order.
	arch32, arch64 string
	endianSuffix   bool
}

var elfMachines = map[elf.Machine]elfMachine{
	elf.EM_X86_64:    {name: "x86-64", arch32: "amd64", arch64: "amd64"}, // x32 is amd64 too
	elf.EM_386:       {name: "Intel 80386", arch32: "386", arch64: "386"},
	elf.EM_AARCH64:   {name: "AArch64", arch32: "arm64", arch64: "arm64"},
	elf.EM_ARM:       {name: "ARM", arch32: "arm", arch64: "arm"},
	elf.EM_PPC64:     {name: "PowerPC64", arch64: "ppc64", endianSuffix: true},
	elf.EM_PPC:       {name: "PowerPC", arch32: "ppc"},
	elf.EM_S390:      {name: "IBM S/390", arch32: "s390", arch64: "s390x"},
	elf.EM_RISCV:     {name: "RISC-V", arch32: "riscv32", arch64: "riscv64"},
	elf.EM_MIPS:      {name: "MIPS", arch32: "mips", arch64: "mips64", endianSuffix: true},
	elf.EM_LOONGARCH: {name: "LoongArch", arch32: "loong32", arch64: "loong64"},
	elf.EM_SPARCV9:   {name: "SPARC V9", arch64: "sparc64"},
}

func identifyELF(b []byte) (Header, error) {
	if len(b) < 20 {
		return Header{}, fmt.Errorf("ELF header truncated at %d bytes", len(b))
	}
	class, data := elf.Class(b[elf.EI_CLASS]), elf.Data(b[elf.EI_DATA])
	var order binary.ByteOrder
	switch data {
	case elf.ELFDATA2LSB:
		order = binary.LittleEndian
	case elf.ELFDATA2MSB:
		order = binary.BigEndian
	default:
		return Header{}, fmt.Errorf("ELF header: unknown byte order %d", data)
	}
	machine := elf.Machine(order.Uint16(b[18:20]))
	h := Header{Format: ELF, Machine: machine.String()}
	if osabi := elf.OSABI(b[elf.EI_OSABI]); osabi != elf.ELFOSABI_NONE && osabi != elf.ELFOSABI_LINUX {
		h.OS = strings.ToLower(strings.TrimPrefix(osabi.String(), "ELFOSABI_"))
	}
	m, ok := elfMachines[machine]
	if !ok {
		return h, nil
	}
	h.Machine = m.name
	h.Arch = m.arch64
	if class == elf.ELFCLASS32 {
		h.Arch = m.arch32
	}
	if h.Arch == "" {
		return h, nil
	}
	if m.endianSuffix && data == elf.ELFDATA2LSB {
		h.Arch += "le"
		h.Machine += " little-endian"
	}
	if class == elf.ELFCLASS32 && m.arch32 != m.arch64 {
		h.Machine += " 32-bit"
	}
	return h, nil
}

var peMachines = map[uint16]struct{ name, arch string }{
	pe.IMAGE_FILE_MACHINE_AMD64: {"x86-64", "amd64"},
	pe.IMAGE_FILE_MACHINE_I386:  {"Intel 386", "386"},
	pe.IMAGE_FILE_MACHINE_ARM64: {"ARM64", "arm64"},
	pe.IMAGE_FILE_MACHINE_ARMNT: {"ARM Thumb-2", "arm"},
}

func identifyPE(b []byte) (Header, error) {
	if len(b) < 0x40 {
		return Header{}, fmt.Errorf("DOS header truncated at %d bytes", len(b))
	}
	// The offset is the file's: compared as a uint64, as an int it would wrap on 32-bit
	// platforms (0x7ffffffe + 6 is negative) and pass the bounds check.
	off64 := uint64(binary.LittleEndian.Uint32(b[0x3c:]))
	if off64+6 > uint64(len(b)) {
		return Header{}, fmt.Errorf("PE header at offset %d, beyond the first %d bytes read", off64, len(b))
	}
	off := int(off64)
	if !bytes.Equal(b[off:off+4], []byte("PE\x00\x00")) {
		// A DOS program, or something else starting with MZ.
		return Header{Format: Unknown}, nil
	}
	machine := binary.LittleEndian.Uint16(b[off+4:])
	h := Header{Format: PE, OS: "windows", Machine: fmt.Sprintf("machine 0x%04x", machine)}
	if m, ok := peMachines[machine]; ok {
		h.Machine, h.Arch = m.name, m.arch
	}
	return h, nil
}

var machoCPUs = map[macho.Cpu]struct{ name, arch string }{
	macho.CpuAmd64: {"x86-64", "amd64"},
	macho.Cpu386:   {"i386", "386"},
	macho.CpuArm64: {"ARM64", "arm64"},
	macho.CpuArm:   {"ARM", "arm"},
	macho.CpuPpc64: {"PowerPC64", "ppc64"},
	macho.CpuPpc:   {"PowerPC", "ppc"},
}

// maxFatArches tells a fat Mach-O (0xcafebabe, then a few architectures) from a Java
// class file (0xcafebabe, then a version number of 45 or more).
const maxFatArches = 30

func identifyMachO(b []byte) (Header, bool, error) {
	be, le := binary.BigEndian.Uint32(b), binary.LittleEndian.Uint32(b)
	var order binary.ByteOrder
	switch {
	case be == macho.MagicFat:
		if n := binary.BigEndian.Uint32(b[4:]); n == 0 || n > maxFatArches {
			return Header{}, false, nil
		}
		return Header{Format: MachO, OS: "darwin", Machine: "universal"}, true, nil
	case le == macho.Magic32 || le == macho.Magic64:
		order = binary.LittleEndian
	case be == macho.Magic32 || be == macho.Magic64:
		order = binary.BigEndian
	default:
		return Header{}, false, nil
	}
	cpu := macho.Cpu(order.Uint32(b[4:]))
	h := Header{Format: MachO, OS: "darwin", Machine: cpu.String()}
	if m, ok := machoCPUs[cpu]; ok {
		h.Machine, h.Arch = m.name, m.arch
	}
	return h, true, nil
}

// identifyScript reads "#!interpreter [arg]" as Linux does: the interpreter, then the
// rest of the line as one argument. "/usr/bin/env -S a b" is split as env would split it.
func identifyScript(b []byte) (Header, error) {
	line := b[2:min(len(b), maxShebang)]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimSpace(bytes.TrimSuffix(line, []byte("\r")))
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return Header{}, fmt.Errorf("empty #! line")
	}
	h := Header{Format: Script, Interpreter: fields[0]}
	if rest := strings.TrimSpace(strings.TrimPrefix(string(line), fields[0])); rest != "" {
		h.Args = []string{rest}
		if len(fields) > 2 && fields[1] == "-S" {
			h.Args = fields[1:]
		}
	}
	return h, nil
}

// EnvCommand returns the command "#!/usr/bin/env [-S] [VAR=x...] name" runs, or "".
func (h Header) EnvCommand() string {
	if h.Format != Script || !strings.HasSuffix(h.Interpreter, "/env") {
		return ""
	}
	for _, a := range strings.Fields(strings.Join(h.Args, " ")) {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
			continue
		}
		return a
	}
	return ""
}

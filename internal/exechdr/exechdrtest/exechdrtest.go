// Package exechdrtest crafts the first bytes of executables for tests: an ELF, PE or
// Mach-O header for an architecture, as a linker writes it, and nothing after it.
package exechdrtest

import (
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"fmt"
)

// elfOf is the machine, class and byte order of each GOARCH.
var elfOf = map[string]struct {
	machine elf.Machine
	class   elf.Class
	data    elf.Data
}{
	"amd64":    {elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"386":      {elf.EM_386, elf.ELFCLASS32, elf.ELFDATA2LSB},
	"arm64":    {elf.EM_AARCH64, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"arm":      {elf.EM_ARM, elf.ELFCLASS32, elf.ELFDATA2LSB},
	"ppc64le":  {elf.EM_PPC64, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"ppc64":    {elf.EM_PPC64, elf.ELFCLASS64, elf.ELFDATA2MSB},
	"s390x":    {elf.EM_S390, elf.ELFCLASS64, elf.ELFDATA2MSB},
	"riscv64":  {elf.EM_RISCV, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"mips64le": {elf.EM_MIPS, elf.ELFCLASS64, elf.ELFDATA2LSB},
	"mips":     {elf.EM_MIPS, elf.ELFCLASS32, elf.ELFDATA2MSB},
	"loong64":  {elf.EM_LOONGARCH, elf.ELFCLASS64, elf.ELFDATA2LSB},
}

// ELF returns a 64-byte ELF header of an executable for goarch (a GOARCH value).
func ELF(goarch string) []byte {
	m, ok := elfOf[goarch]
	if !ok {
		panic(fmt.Sprintf("exechdrtest: no ELF machine for %q", goarch))
	}
	b := make([]byte, 64)
	copy(b, elf.ELFMAG)
	b[elf.EI_CLASS], b[elf.EI_DATA], b[elf.EI_VERSION] = byte(m.class), byte(m.data), byte(elf.EV_CURRENT)
	var order binary.ByteOrder = binary.LittleEndian
	if m.data == elf.ELFDATA2MSB {
		order = binary.BigEndian
	}
	order.PutUint16(b[16:], uint16(elf.ET_EXEC))
	order.PutUint16(b[18:], uint16(m.machine))
	order.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	return b
}

// PE returns a DOS stub and PE header for machine (pe.IMAGE_FILE_MACHINE_*), the PE
// header at offset 0x80 as Microsoft's linker puts it.
func PE(machine uint16) []byte {
	b := make([]byte, 0x80+24)
	copy(b, "MZ")
	binary.LittleEndian.PutUint32(b[0x3c:], 0x80)
	copy(b[0x80:], "PE\x00\x00")
	binary.LittleEndian.PutUint16(b[0x84:], machine)
	return b
}

// MachO returns a 64-bit little-endian Mach-O header for cpu.
func MachO(cpu macho.Cpu) []byte {
	b := make([]byte, 32)
	binary.LittleEndian.PutUint32(b, macho.Magic64)
	binary.LittleEndian.PutUint32(b[4:], uint32(cpu))
	binary.LittleEndian.PutUint32(b[12:], uint32(macho.TypeExec))
	return b
}

// Windows is PE for a GOARCH value.
func Windows(goarch string) []byte {
	return PE(map[string]uint16{"amd64": pe.IMAGE_FILE_MACHINE_AMD64, "arm64": pe.IMAGE_FILE_MACHINE_ARM64, "386": pe.IMAGE_FILE_MACHINE_I386}[goarch])
}

package seccompbpf

import (
	"encoding/binary"
	"testing"
)

func prog(ins ...insn) []byte {
	b := make([]byte, 0, 8*len(ins))
	for _, in := range ins {
		b = binary.NativeEndian.AppendUint16(b, in.code)
		b = append(b, in.jt, in.jf)
		b = binary.NativeEndian.AppendUint32(b, in.k)
	}
	return b
}

// TestEquivalent: two orders of a stub's architecture checks are the same
// program; a stub that returns ALLOW, jumps elsewhere, tests another
// architecture or reads an argument is not (or not provably).
func TestEquivalent(t *testing.T) {
	const x86, i386, allow, enosys, kill = 0xc000003e, 0x40000003, 0x7fff0000, 0x50026, 0
	tail := []insn{{ldAbsW, 0, 0, 4}, {jeqK, 1, 0, x86}, {retK, 0, 0, kill}, {retK, 0, 0, allow}}
	with := func(stub ...insn) []byte { return prog(append(stub, tail...)...) }
	// ld arch; jeq x86 -> A; jeq i386 -> B; ja filter; A: ld nr; jgt 450 -> enosys; ja filter; B: ld nr; jgt 460 -> enosys; ja filter; enosys
	order1 := with(
		insn{ldAbsW, 0, 0, 4}, insn{jeqK, 2, 0, x86}, insn{jeqK, 4, 0, i386}, insn{ja, 0, 0, 7},
		insn{ldAbsW, 0, 0, 0}, insn{jgtK, 4, 0, 450}, insn{ja, 0, 0, 4},
		insn{ldAbsW, 0, 0, 0}, insn{jgtK, 1, 0, 460}, insn{ja, 0, 0, 1},
		insn{retK, 0, 0, enosys})
	order2 := with(
		insn{ldAbsW, 0, 0, 4}, insn{jeqK, 5, 0, x86}, insn{jeqK, 1, 0, i386}, insn{ja, 0, 0, 7},
		insn{ldAbsW, 0, 0, 0}, insn{jgtK, 4, 0, 460}, insn{ja, 0, 0, 4},
		insn{ldAbsW, 0, 0, 0}, insn{jgtK, 1, 0, 450}, insn{ja, 0, 0, 1},
		insn{retK, 0, 0, enosys})
	if !Equivalent(order1, order2) {
		t.Error("two orders of one stub are not equivalent")
	}
	for name, p := range map[string][]byte{
		"allow-all":      prog(insn{retK, 0, 0, allow}),
		"stub allows":    with(insn{ldAbsW, 0, 0, 4}, insn{jeqK, 0, 1, x86}, insn{retK, 0, 0, allow}),
		"other limit":    with(insn{ldAbsW, 0, 0, 4}, insn{jeqK, 2, 0, x86}, insn{jeqK, 4, 0, i386}, insn{ja, 0, 0, 7}, insn{ldAbsW, 0, 0, 0}, insn{jgtK, 4, 0, 451}, insn{ja, 0, 0, 4}, insn{ldAbsW, 0, 0, 0}, insn{jgtK, 1, 0, 460}, insn{ja, 0, 0, 1}, insn{retK, 0, 0, enosys}),
		"reads argument": with(insn{ldAbsW, 0, 0, 16}, insn{jeqK, 0, 1, 1}, insn{retK, 0, 0, allow}),
	} {
		if Equivalent(order1, p) || Equivalent(p, order1) {
			t.Errorf("%s: taken for the request's program", name)
		}
	}
}

// TestConsSat: interval, bit and exclusion constraints together.
func TestConsSat(t *testing.T) {
	all := cons{hi: ^uint32(0)}
	x32 := insn{jsetK, 0, 0, 0x40000000}
	for name, c := range map[string]struct {
		c    cons
		want bool
	}{
		"everything":            {all, true},
		"x32 bit above 456":     {all.with(x32, true).with(insn{jgtK, 0, 0, 456}, true), true},
		"x32 bit at most 456":   {all.with(x32, true).with(insn{jgtK, 0, 0, 456}, false), false},
		"no x32 bit, big":       {all.with(x32, false).with(insn{jgeK, 0, 0, 0x40000000}, true), true},
		"one value, excluded":   {all.with(insn{jeqK, 0, 0, 7}, true).with(insn{jeqK, 0, 0, 7}, false), false},
		"two values, one out":   {all.with(insn{jgeK, 0, 0, 7}, true).with(insn{jgtK, 0, 0, 8}, false).with(insn{jeqK, 0, 0, 7}, false), true},
		"set and clear one bit": {all.with(x32, true).and(all.with(x32, false)), false},
		"above the top":         {all.with(insn{jgtK, 0, 0, ^uint32(0)}, true), false},
	} {
		if got := c.c.sat(); got != c.want {
			t.Errorf("%s: sat %v, want %v", name, got, c.want)
		}
	}
}

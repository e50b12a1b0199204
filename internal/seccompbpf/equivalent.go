package seccompbpf

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// Equivalent reports whether the classic BPF seccomp program got returns
// what want (a program libcontainer built, internal/seccompbpf's Of) does
// for every syscall, proven, not sampled; false means not proven.
//
// libcontainer's programs are not byte-stable: runc's patchbpf prepends an
// ENOSYS stub to libseccomp's filter, whose architecture sections and
// checks it emits in Go map order, so two builds of one profile differ in
// their first instructions. want's stub ends where its "no architecture
// matched" jump lands (stubEnd: runc's layout, read from the trusted
// program only); got must end with want's filter byte for byte. Both stubs
// may only load the syscall number or the architecture (seccomp_data
// offsets 0 and 4), test the accumulator against constants (jeq, jgt,
// jge, jset of one bit), jump forward and return constants. Every path
// through a stub is then a set of constraints on (nr, arch) and an
// outcome: a return value, or the filter instruction it enters with the
// accumulator holding the number, the architecture or nothing. No two
// paths of the two stubs whose constraints some (nr, arch) meets may have
// different outcomes; then the same filter runs from the same state (X
// and the scratch memory untouched) and the programs are equal.
func Equivalent(got, want []byte) bool {
	if len(got)%8 != 0 || len(want)%8 != 0 {
		return false
	}
	if slices.Equal(got, want) {
		return true
	}
	w, g := decode(want), decode(got)
	end, ok := stubEnd(w)
	if !ok || len(g) < len(w)-end || !slices.Equal(g[len(g)-(len(w)-end):], w[end:]) {
		return false
	}
	pg, okG := paths(g[:len(g)-(len(w)-end)])
	pw, okW := paths(w[:end])
	if !okG || !okW {
		return false
	}
	for _, a := range pg {
		for _, b := range pw {
			if a.out != b.out && a.cons[0].and(b.cons[0]).sat() && a.cons[1].and(b.cons[1]).sat() {
				return false
			}
		}
	}
	return true
}

// stubEnd is the first instruction of libseccomp's filter in a program
// runc's patchbpf made: its stub loads the architecture, checks each one
// (jeq, or a "jne, ja" pair for a long jump) and jumps to the filter when
// none matched.
func stubEnd(p []insn) (int, bool) {
	if len(p) == 0 || p[0] != (insn{ldAbsW, 0, 0, 4}) {
		return 0, false
	}
	i := 1
	for i < len(p) && p[i].code == jeqK {
		if p[i].jt == 0 && p[i].jf == 1 && i+1 < len(p) && p[i+1].code == ja {
			i++
		}
		i++
	}
	if i >= len(p) || p[i].code != ja || uint64(i)+1+uint64(p[i].k) > uint64(len(p)) {
		return 0, false
	}
	return i + 1 + int(p[i].k), true
}

type insn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

// The instructions a stub prefix may hold.
const (
	ldAbsW = 0x20 // BPF_LD|BPF_W|BPF_ABS
	ja     = 0x05 // BPF_JMP|BPF_JA
	jeqK   = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
	jgtK   = 0x25
	jgeK   = 0x35
	jsetK  = 0x45
	retK   = 0x06 // BPF_RET|BPF_K
)

func decode(p []byte) []insn {
	out := make([]insn, 0, len(p)/8)
	for i := 0; i < len(p); i += 8 {
		out = append(out, insn{binary.NativeEndian.Uint16(p[i:]), p[i+2], p[i+3], binary.NativeEndian.Uint32(p[i+4:])})
	}
	return out
}

// outcome is where a prefix leaves a syscall: a return value, or the
// suffix instruction it enters with the accumulator's source (0 nothing,
// 1 the number, 2 the architecture).
type outcome struct {
	ret    bool
	val    uint32
	entry  uint64
	source int
}

// path is one way through a stub: what it needs of nr (cons[0]) and
// arch (cons[1]), and where it leaves the syscall.
type path struct {
	cons [2]cons
	out  outcome
}

// maxPaths bounds a stub's paths (runc's have a few per architecture).
const maxPaths = 4096

// paths are the satisfiable paths through stub p; false if p holds an
// instruction Equivalent does not model, or too many paths.
func paths(p []insn) ([]path, bool) {
	var out []path
	var walk func(pc uint64, source int, cs [2]cons) bool
	walk = func(pc uint64, source int, cs [2]cons) bool {
		if !cs[0].sat() || !cs[1].sat() {
			return true
		}
		if pc >= uint64(len(p)) {
			out = append(out, path{cs, outcome{entry: pc - uint64(len(p)), source: source}})
			return len(out) <= maxPaths
		}
		in := p[pc]
		switch in.code {
		case ldAbsW:
			if in.k != 0 && in.k != 4 {
				return false
			}
			return walk(pc+1, 1+int(in.k/4), cs)
		case ja:
			return walk(pc+1+uint64(in.k), source, cs)
		case retK:
			out = append(out, path{cs, outcome{ret: true, val: in.k}})
			return len(out) <= maxPaths
		case jeqK, jgtK, jgeK, jsetK:
			if in.code == jsetK && bits.OnesCount32(in.k) != 1 {
				return false
			}
			if source == 0 { // A is 0: the test is decided
				next := uint64(in.jf)
				if test(in, 0) {
					next = uint64(in.jt)
				}
				return walk(pc+1+next, source, cs)
			}
			yes, no := cs, cs
			yes[source-1], no[source-1] = cs[source-1].with(in, true), cs[source-1].with(in, false)
			return walk(pc+1+uint64(in.jt), source, yes) && walk(pc+1+uint64(in.jf), source, no)
		default:
			return false
		}
	}
	all := [2]cons{{hi: ^uint32(0)}, {hi: ^uint32(0)}}
	if !walk(0, 0, all) {
		return nil, false
	}
	return out, true
}

// test is a conditional jump's condition on the value a.
func test(in insn, a uint32) bool {
	switch in.code {
	case jeqK:
		return a == in.k
	case jgtK:
		return a > in.k
	case jgeK:
		return a >= in.k
	default:
		return a&in.k != 0
	}
}

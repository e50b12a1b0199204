//go:build linux && cgo && seccomp

package security

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/internal/seccompbpf"
)

// The tests here evaluate the filters runc really builds: a profile goes
// through runc's specconv.SetupSeccomp and libcontainer's InitSeccomp in
// a helper (internal/seccompbpf.Of), whose installed program is read
// back from the kernel and run, without loading it here, on a cBPF
// interpreter (golang.org/x/net/bpf) over a struct seccomp_data.

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == seccompbpf.Arg {
		os.Exit(seccompbpf.Main())
	}
	os.Exit(m.Run())
}

// auditArch is the native AUDIT_ARCH_* value.
var auditArch = map[string]uint32{"amd64": 0xc000003e, "arm64": 0xc00000b7}

var (
	compiledMu sync.Mutex
	compiled   = map[string]*bpf.VM{}
)

// realFilter is the program runc installs for p.
func realFilter(t testing.TB, p *specs.LinuxSeccomp) (*bpf.VM, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (ptrace of the helper's seccomp filter)")
	}
	if _, ok := auditArch[runtime.GOARCH]; !ok {
		t.Skip("no AUDIT_ARCH value known for " + runtime.GOARCH)
	}
	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	compiledMu.Lock()
	defer compiledMu.Unlock()
	if vm, ok := compiled[string(body)]; ok {
		return vm, nil
	}
	cfg, err := specconv.SetupSeccomp(p)
	if err != nil {
		return nil, err
	}
	chain, err := seccompbpf.Of(cfg)
	if err != nil {
		return nil, err
	}
	prog := chain[0].Prog // newest first: the one cfg made
	raw := make([]bpf.RawInstruction, 0, len(prog)/8)
	for i := 0; i+8 <= len(prog); i += 8 {
		raw = append(raw, bpf.RawInstruction{Op: binary.NativeEndian.Uint16(prog[i:]), Jt: prog[i+2], Jf: prog[i+3],
			K: binary.NativeEndian.Uint32(prog[i+4:])})
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("cannot disassemble the filter of %s", body)
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatalf("filter of %s: %v", body, err)
	}
	compiled[string(body)] = vm
	return vm, nil
}

// runFilter runs vm on the native architecture's call nr(args): the
// SECCOMP_RET_* value. The interpreter loads words big-endian; seccomp
// loads them in the host's order: each 32-bit word is written as the
// filter reads it (seccomp_data: nr, arch, ip, args[6]).
func runFilter(t testing.TB, vm *bpf.VM, nr int, args [6]uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(nr)) //nolint:gosec // G115: a syscall number
	binary.BigEndian.PutUint32(data[4:], auditArch[runtime.GOARCH])
	for i, a := range args {
		lo, hi := uint32(a), uint32(a>>32) //nolint:gosec // G115: the two halves
		if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
			lo, hi = hi, lo
		}
		binary.BigEndian.PutUint32(data[16+8*i:], lo)
		binary.BigEndian.PutUint32(data[20+8*i:], hi)
	}
	r, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(r) //nolint:gosec // G115: the filter's return value
}

// strictness orders SECCOMP_RET_* values as the kernel does: the action
// (high 16 bits) as a signed number, the lower the stricter.
func strictness(r uint32) int64 { return -int64(int32(r & 0xffff0000)) } //nolint:gosec // G115: the kernel's order

// stricterRet is the more restrictive of two returns, x on a tie.
func stricterRet(x, y uint32) uint32 {
	if strictness(y) > strictness(x) {
		return y
	}
	return x
}

const (
	retAllow = 0x7fff0000
	retErrno = 0x00050000
	retLog   = 0x7ffc0000
)

func runtimeDefault(t testing.TB) *specs.LinuxSeccomp {
	spec := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN"}}}}
	base, err := seccomp.GetDefaultProfile(spec)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

func jsonProfile(t testing.TB, s string) *specs.LinuxSeccomp {
	var p specs.LinuxSeccomp
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// TestIntersectRuncSemantics: the reviewer's reproductions, each a call
// that the pulled profile or its base denies, that an intersection built
// on "the most restrictive matching rule wins" let through (or that runc
// refused to build).
func TestIntersectRuncSemantics(t *testing.T) {
	for _, c := range []struct {
		name, pulled, base string
		nr                 int
		args               [6]uint64
	}{
		{"a: the pulled rule equals moby's default", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["personality"],
		 "action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":8,"op":"SCMP_CMP_EQ"}]}]}`, "", unix.SYS_PERSONALITY, [6]uint64{8}},
		{"b: an unconditional LOG overrides a conditional ERRNO", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["getpid"],"action":"SCMP_ACT_LOG"}]}`,
			`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["getpid"],"action":"SCMP_ACT_ERRNO","errnoRet":13,
			 "args":[{"index":0,"value":5,"op":"SCMP_CMP_EQ"}]}]}`, unix.SYS_GETPID, [6]uint64{5}},
		{"c: the first match wins, not the strictest", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["getpid"],"action":"SCMP_ACT_LOG",
		 "args":[{"index":1,"value":3,"op":"SCMP_CMP_EQ"}]}]}`, `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["getpid"],
		 "action":"SCMP_ACT_ERRNO","errnoRet":13,"args":[{"index":0,"value":5,"op":"SCMP_CMP_EQ"}]}]}`, unix.SYS_GETPID, [6]uint64{5, 3}},
		{"d: two actions on the same conditions", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["personality"],
		 "action":"SCMP_ACT_ERRNO","errnoRet":13,"args":[{"index":0,"value":8,"op":"SCMP_CMP_EQ"}]}]}`, "", unix.SYS_PERSONALITY, [6]uint64{8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := jsonProfile(t, c.pulled)
			b := runtimeDefault(t)
			if c.base != "" {
				b = jsonProfile(t, c.base)
			}
			m, err := Intersect(a, b)
			if err != nil {
				t.Fatal(err)
			}
			va, vb := verdictOf(t, a, c.nr, c.args), verdictOf(t, b, c.nr, c.args)
			want := stricterRet(va, vb)
			got := verdictOf(t, m, c.nr, c.args)
			if strictness(got) < strictness(want) {
				t.Errorf("call %d%v: intersection returns %#x, pulled %#x, base %#x", c.nr, c.args[:2], got, va, vb)
			}
		})
	}
}

// verdictOf is what runc's filter for p returns for nr(args).
func verdictOf(t testing.TB, p *specs.LinuxSeccomp, nr int, args [6]uint64) uint32 {
	t.Helper()
	vm, err := realFilter(t, p)
	if err != nil {
		j, _ := json.Marshal(p)
		t.Fatalf("runc cannot build the filter: %v\nprofile: %s", err, j)
	}
	return runFilter(t, vm, nr, args)
}

//go:build linux && cgo && seccomp

package security

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

func syscallNr(t testing.TB, name string) int {
	t.Helper()
	nr, err := libseccomp.GetSyscallFromName(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return int(nr)
}

// listAll is p listing, with its default action, the names q lists too:
// runc skips the rules but its ENOSYS stub counts them (a call numbered
// above every listed name gets ENOSYS, not a non-allowing default). The
// intersection lists the names of both, so it is exact only against
// profiles whose stubs agree with its own: those.
func listAll(p, q *specs.LinuxSeccomp) *specs.LinuxSeccomp {
	out := *p
	out.Syscalls = slices.Clone(p.Syscalls)
	for _, sc := range q.Syscalls {
		out.Syscalls = append(out.Syscalls, specs.LinuxSyscall{Names: sc.Names, Action: p.DefaultAction, ErrnoRet: p.DefaultErrnoRet})
	}
	return &out
}

// checkReal compares, on the filters runc builds, the merged verdict with
// the more restrictive of a's and b's (a's on a tie) for every name and
// argument pair drawn from testValues: at least as restrictive always,
// equal where intersect says it is exact (up to runc's ENOSYS stub:
// listAll). It counts the calls whose
// verdict is the same.
func checkReal(t testing.TB, a, b *specs.LinuxSeccomp) (exact bool, same, calls int) {
	t.Helper()
	m, exact, err := intersect(a, b)
	if err != nil {
		t.Fatalf("intersect: %v", err)
	}
	for _, p := range []*specs.LinuxSeccomp{a, b} {
		if _, err := realFilter(t, p); err != nil {
			t.Logf("runc rejects an input, skipped: %v", err)
			return false, 0, 0
		}
	}
	pa, pb := listAll(a, b), listAll(b, a)
	for _, n := range append(slices.Clone(testNames), "getuid") {
		nr := syscallNr(t, n)
		for _, x := range testValues {
			for _, y := range testValues {
				args := [6]uint64{x, y}
				want := stricterRet(verdictOf(t, a, nr, args), verdictOf(t, b, nr, args))
				same1 := stricterRet(verdictOf(t, pa, nr, args), verdictOf(t, pb, nr, args))
				got := verdictOf(t, m, nr, args)
				calls++
				if got == same1 {
					same++
				}
				if strictness(got) < strictness(want) || (exact && got != same1) {
					ja, _ := json.Marshal(a)
					jb, _ := json.Marshal(b)
					jm, _ := json.Marshal(m)
					t.Fatalf("call %s%v: merged %#x, want %#x (exact %v)\na: %s\nb: %s\nmerged: %s", n, args[:2], got, want, exact, ja, jb, jm)
				}
			}
		}
	}
	return exact, same, calls
}

// TestIntersectIsTheMostRestrictive: random pairs on the real filters.
func TestIntersectIsTheMostRestrictive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 200
	if testing.Short() {
		n = 60
	}
	exact, same, calls := 0, 0, 0
	for range n {
		e, s, c := checkReal(t, randProfile(r), randProfile(r))
		if e {
			exact++
		}
		same, calls = same+s, calls+c
	}
	t.Logf("%d of %d random pairs merged exactly (%.1f%%); %d of %d calls have the verdict of the stricter (%.1f%%)",
		exact, n, 100*float64(exact)/float64(n), same, calls, 100*float64(same)/float64(calls))
	if exact < n/5 {
		t.Errorf("only %d of %d random pairs merged exactly", exact, n)
	}
}

func FuzzIntersect(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(7), uint64(99))
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		r := rand.New(rand.NewPCG(s1, s2))
		checkReal(t, randProfile(r), randProfile(r))
	})
}

// TestIntersectWithTheDefault: a pulled profile that denies mkdir on moby's
// default profile: mkdir is denied, what the default allows stays allowed
// (clone on its flag conditions among it), what it denies stays denied;
// a pulled profile derived from moby's default merges exactly.
func TestIntersectWithTheDefault(t *testing.T) {
	spec := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}}
	base, err := Seccomp(Profile{Type: ProfileRuntimeDefault}, false, spec)
	if err != nil {
		t.Fatal(err)
	}
	pulled := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{
		{Names: []string{"mkdir", "mkdirat"}, Action: specs.ActErrno}}}
	derived := mobyWithout(t, base, "mkdir", "mkdirat")
	for _, p := range []*specs.LinuxSeccomp{pulled, derived} {
		m, exact, err := intersect(p, base)
		if err != nil {
			t.Fatal(err)
		}
		if !exact {
			t.Errorf("not exact")
		}
		call := func(name string, arg0 uint64) uint32 {
			return verdictOf(t, m, syscallNr(t, name), [6]uint64{arg0}) &^ 0xffff
		}
		for name, want := range map[string]uint32{
			"mkdirat": retErrno, "read": retAllow, "unlinkat": retAllow, "kexec_load": retErrno, "bpf": retErrno,
		} {
			if got := call(name, 0); got != want {
				t.Errorf("%s: %#x, want %#x", name, got, want)
			}
		}
		if got := call("clone", uint64(unix.SIGCHLD)|unix.CLONE_VM); got != retAllow {
			t.Errorf("clone(SIGCHLD|CLONE_VM): %#x, want allowed", got)
		}
		if got := call("clone", unix.CLONE_NEWUSER); got == retAllow {
			t.Errorf("clone(CLONE_NEWUSER): allowed")
		}
		if (len(p.Architectures) == 0) != (len(m.Architectures) == 0) || m.DefaultAction != specs.ActErrno { // none listed: the native one only
			t.Errorf("architectures %v, default %s", m.Architectures, m.DefaultAction)
		}
	}
}

// mobyWithout is p without the names (left to its default).
func mobyWithout(t *testing.T, p *specs.LinuxSeccomp, names ...string) *specs.LinuxSeccomp {
	t.Helper()
	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var out specs.LinuxSeccomp
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	for i := range out.Syscalls {
		out.Syscalls[i].Names = slices.DeleteFunc(out.Syscalls[i].Names, func(n string) bool { return slices.Contains(names, n) })
	}
	return &out
}

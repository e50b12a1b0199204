package security

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// evalModel is the model Intersect works in (runc over libseccomp): the
// rules naming the call whose conditions hold (conditions on one argument
// named twice are alternatives, else a conjunction); the most restrictive
// of their actions, the first on a tie; else the default.
func evalModel(p *specs.LinuxSeccomp, name string, args [6]uint64) verdict {
	var best *verdict
	for _, sc := range p.Syscalls {
		if !slices.Contains(sc.Names, name) || !ruleHolds(sc.Args, args) {
			continue
		}
		v := verdict{act: sc.Action, ret: sc.ErrnoRet}
		if best == nil || actionRank[v.act] > actionRank[best.act] {
			best = &v
		}
	}
	if best == nil {
		return verdict{act: p.DefaultAction, ret: p.DefaultErrnoRet}
	}
	return *best
}

func ruleHolds(conds []specs.LinuxSeccompArg, args [6]uint64) bool {
	seen := map[uint]bool{}
	repeated := false
	for _, c := range conds {
		repeated = repeated || seen[c.Index]
		seen[c.Index] = true
	}
	any, all := false, true
	for _, c := range conds {
		h := holds(c, args[c.Index])
		any, all = any || h, all && h
	}
	if repeated {
		return any
	}
	return all
}

var (
	testNames   = []string{"a", "b", "c", "d"}
	testValues  = []uint64{0, 1, 2, 3, 4, math.MaxUint64 - 1, math.MaxUint64}
	testActions = []specs.LinuxSeccompAction{specs.ActAllow, specs.ActLog, specs.ActErrno, specs.ActTrap, specs.ActKillProcess}
	testOps     = []specs.LinuxSeccompOperator{specs.OpEqualTo, specs.OpNotEqual, specs.OpLessThan, specs.OpLessEqual,
		specs.OpGreaterThan, specs.OpGreaterEqual, specs.OpMaskedEqual}
)

func one() *uint { v := uint(1); return &v }

func randVerdict(r *rand.Rand) (specs.LinuxSeccompAction, *uint) {
	a := testActions[r.IntN(len(testActions))]
	if hasRet(a) {
		return a, one()
	}
	return a, nil
}

// randProfile draws a small profile over testNames and arguments 0 and 1.
func randProfile(r *rand.Rand) *specs.LinuxSeccomp {
	p := &specs.LinuxSeccomp{}
	p.DefaultAction, p.DefaultErrnoRet = randVerdict(r)
	for range r.IntN(6) {
		var sc specs.LinuxSyscall
		sc.Action, sc.ErrnoRet = randVerdict(r)
		for range 1 + r.IntN(2) {
			sc.Names = append(sc.Names, testNames[r.IntN(len(testNames))])
		}
		for range r.IntN(3) {
			sc.Args = append(sc.Args, specs.LinuxSeccompArg{Index: uint(r.IntN(2)), Op: testOps[r.IntN(len(testOps))],
				Value: testValues[r.IntN(len(testValues))], ValueTwo: testValues[r.IntN(3)]})
		}
		p.Syscalls = append(p.Syscalls, sc)
	}
	return p
}

// checkIntersect compares the merged verdict with the most restrictive of
// a's and b's over every name and argument pair drawn from testValues: at
// least as restrictive always, equal where intersect says it is exact.
func checkIntersect(t *testing.T, a, b *specs.LinuxSeccomp) bool {
	t.Helper()
	m, exact, err := intersect(a, b)
	if err != nil {
		t.Fatalf("intersect: %v", err)
	}
	for _, n := range append(testNames, "other") {
		for _, x := range testValues {
			for _, y := range testValues {
				args := [6]uint64{x, y}
				want := worst(evalModel(a, n, args), evalModel(b, n, args))
				got := evalModel(m, n, args)
				if actionRank[got.act] < actionRank[want.act] || (exact && !got.equal(want)) {
					t.Fatalf("call %s%v: merged %s, want %s (exact %v)\na: %+v\nb: %+v\nmerged: %+v",
						n, args[:2], got.act, want.act, exact, a, b, m)
				}
			}
		}
	}
	return exact
}

func TestIntersectIsTheMostRestrictive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	exact := 0
	const n = 3000
	for range n {
		if checkIntersect(t, randProfile(r), randProfile(r)) {
			exact++
		}
	}
	if exact < n/3 {
		t.Errorf("only %d of %d random pairs merged exactly", exact, n)
	}
	t.Logf("%d of %d random pairs merged exactly", exact, n)
}

func FuzzIntersect(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(7), uint64(99))
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		r := rand.New(rand.NewPCG(s1, s2))
		checkIntersect(t, randProfile(r), randProfile(r))
	})
}

// TestIntersectWithTheDefault: a pulled profile that denies mkdir on moby's
// default profile: mkdir is denied, what the default allows stays allowed
// (clone on its flag conditions among it), what it denies stays denied.
func TestIntersectWithTheDefault(t *testing.T) {
	spec := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}}
	base, err := seccomp.GetDefaultProfile(spec)
	if err != nil {
		t.Fatal(err)
	}
	pulled := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{
		{Names: []string{"mkdir", "mkdirat"}, Action: specs.ActErrno, ErrnoRet: one()}}}
	m, err := Intersect(pulled, base)
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string, arg0 uint64) specs.LinuxSeccompAction {
		return evalModel(m, name, [6]uint64{arg0}).act
	}
	for name, want := range map[string]specs.LinuxSeccompAction{
		"mkdirat": specs.ActErrno, "mkdir": specs.ActErrno, "read": specs.ActAllow,
		"unlinkat": specs.ActAllow, "kexec_load": specs.ActErrno, "bpf": specs.ActErrno,
	} {
		if got := call(name, 0); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if got := call("clone", 0x11); got != specs.ActAllow {
		t.Errorf("clone(SIGCHLD|...): %s, want allowed", got)
	}
	if got := call("clone", 0x10000000); got == specs.ActAllow { // CLONE_NEWUSER
		t.Errorf("clone(CLONE_NEWUSER): allowed")
	}
	if len(m.Architectures) != 0 || m.DefaultAction != specs.ActErrno { // none listed: the native one only
		t.Errorf("architectures %v, default %s", m.Architectures, m.DefaultAction)
	}
}

func TestCombineConditions(t *testing.T) {
	arg := func(op specs.LinuxSeccompOperator, v uint64) specs.LinuxSeccompArg {
		return specs.LinuxSeccompArg{Op: op, Value: v}
	}
	for _, x := range []specs.LinuxSeccompArg{arg(specs.OpLessThan, 3), arg(specs.OpGreaterEqual, 2), arg(specs.OpNotEqual, 2),
		arg(specs.OpEqualTo, 2), arg(specs.OpLessEqual, 0), arg(specs.OpGreaterThan, math.MaxUint64)} {
		for _, y := range []specs.LinuxSeccompArg{arg(specs.OpGreaterThan, 1), arg(specs.OpLessEqual, 5), arg(specs.OpNotEqual, 0),
			arg(specs.OpEqualTo, 4), {Op: specs.OpMaskedEqual, Value: 1, ValueTwo: 0}} {
			c, empty, ok := combine(x, y)
			if !ok {
				continue
			}
			for _, v := range []uint64{0, 1, 2, 3, 4, 5, 6, math.MaxUint64} {
				want := holds(x, v) && holds(y, v)
				if got := !empty && holds(c, v); got != want {
					t.Errorf("%v and %v at %d: %v, want %v (combined %v)", x, y, v, got, want, c)
				}
			}
		}
	}
}

package security

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The verdicts of merged filters are checked on the filters runc really
// builds (seccomp_real_test.go, -tags seccomp); here, what any build can
// check: the result is stated in the part of the seccomp language whose
// meaning under runc and libseccomp the merge relies on.

var (
	// testNames are real system calls (runc ignores unknown names), with
	// no side effect worth mentioning, never made by the test helper.
	testNames   = []string{"getppid", "gettid", "sched_yield", "getcpu"}
	testValues  = []uint64{0, 1, 2, 3, 4, math.MaxUint64 - 1, math.MaxUint64}
	testActions = []specs.LinuxSeccompAction{specs.ActAllow, specs.ActLog, specs.ActErrno, specs.ActTrap, specs.ActKillProcess}
	testOps     = []specs.LinuxSeccompOperator{specs.OpEqualTo, specs.OpNotEqual, specs.OpLessThan, specs.OpLessEqual,
		specs.OpGreaterThan, specs.OpGreaterEqual, specs.OpMaskedEqual}
)

func randVerdict(r *rand.Rand) (specs.LinuxSeccompAction, *uint) {
	a := testActions[r.IntN(len(testActions))]
	if !hasRet(a) {
		return a, nil
	}
	switch r.IntN(3) {
	case 0:
		return a, nil // EPERM, as runc reads it
	case 1:
		v := uint(1)
		return a, &v
	}
	v := uint(13)
	return a, &v
}

// randProfile draws a small profile over testNames and arguments 0 and 1
// that runc accepts, listing at least one name (see listAll: a profile
// listing none has no ENOSYS stub), with no two rules of one name with the same conditions
// (after runc's split) and different actions (libseccomp: "file exists").
func randProfile(r *rand.Rand) *specs.LinuxSeccomp {
	for {
		p := &specs.LinuxSeccomp{}
		p.DefaultAction, p.DefaultErrnoRet = randVerdict(r)
		for range 1 + r.IntN(5) {
			var sc specs.LinuxSyscall
			sc.Action, sc.ErrnoRet = randVerdict(r)
			for range 1 + r.IntN(2) {
				sc.Names = append(sc.Names, testNames[r.IntN(len(testNames))])
			}
			for range r.IntN(3) {
				c := specs.LinuxSeccompArg{Index: uint(r.IntN(2)), Op: testOps[r.IntN(len(testOps))],
					Value: testValues[r.IntN(len(testValues))], ValueTwo: testValues[r.IntN(3)]}
				if (c.Op == specs.OpLessThan && c.Value == 0) || (c.Op == specs.OpGreaterThan && c.Value == math.MaxUint64) {
					continue // never holds: libseccomp may reject the rule
				}
				sc.Args = append(sc.Args, c)
			}
			p.Syscalls = append(p.Syscalls, sc)
		}
		if runcAccepts(p) {
			return p
		}
	}
}

func runcAccepts(p *specs.LinuxSeccomp) bool {
	def, _ := newVerdict(p.DefaultAction, p.DefaultErrnoRet)
	seen := map[string]verdict{}
	for _, sc := range p.Syscalls {
		v, _ := newVerdict(sc.Action, sc.ErrnoRet)
		if v == def {
			continue
		}
		rs := splitRule(sc.Args)
		if len(sc.Args) == 0 {
			rs = []rule{{}}
		}
		for _, n := range sc.Names {
			for _, r := range rs {
				k := n + "|" + r.key()
				if w, ok := seen[k]; ok && w != v {
					return false
				}
				seen[k] = v
			}
		}
	}
	return true
}

// TestIntersectStatesItsRulesPlainly: for one name, never an
// unconditional rule beside conditional ones, conditional rules of two
// actions, a rule of the default action, two conditions on one argument.
func TestIntersectStatesItsRulesPlainly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		a, b := randProfile(r), randProfile(r)
		m, err := Intersect(a, b)
		if err != nil {
			t.Fatal(err)
		}
		def, _ := newVerdict(m.DefaultAction, m.DefaultErrnoRet)
		uncond, condAct := map[string]bool{}, map[string]verdict{}
		for _, sc := range m.Syscalls {
			v, _ := newVerdict(sc.Action, sc.ErrnoRet)
			if v == def {
				if len(sc.Args) > 0 || slices.ContainsFunc(sc.Names, func(n string) bool { _, c := condAct[n]; return uncond[n] || c }) {
					t.Fatalf("a rule of the default action beside other rules: %+v", m)
				}
				continue // names listed for runc's ENOSYS stub only
			}
			idx := map[uint]bool{}
			for _, c := range sc.Args {
				if idx[c.Index] {
					t.Fatalf("two conditions on argument %d: %+v", c.Index, m)
				}
				idx[c.Index] = true
			}
			for _, n := range sc.Names {
				w, cond := condAct[n]
				switch {
				case len(sc.Args) == 0 && (uncond[n] || cond), len(sc.Args) > 0 && (uncond[n] || cond && w != v):
					t.Fatalf("%s: rules runc would read otherwise: %+v\na: %+v\nb: %+v", n, m, a, b)
				case len(sc.Args) == 0:
					uncond[n] = true
				default:
					condAct[n] = v
				}
			}
		}
	}
}

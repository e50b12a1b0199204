package security

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/internal/errdefs"
)

// Intersect returns the seccomp filter that allows a system call only if
// both a and b allow it (KEP-6061: a pulled profile and its base). Its
// model of a filter (the one runc and libseccomp build): a rule whose
// conditions name one argument more than once is one rule per condition
// (runc ORs them), else its conditions are a conjunction; a call's verdict
// is the most restrictive action of the rules of its name that match,
// else the default action. The result's verdict is the most restrictive of
// a's and b's verdicts, by the kernel's precedence: KILL_PROCESS >
// KILL_THREAD (KILL) > TRAP > ERRNO > NOTIFY > TRACE > LOG > ALLOW; two
// ERRNO (or TRACE) verdicts with different values keep a's.
//
// Where a verdict cannot be written as seccomp rules (two conditions on
// one argument that no single condition states, the complement of a
// MASKED_EQ, too many pieces), the result is more restrictive instead,
// never less: the call falls to the more restrictive default action.
// Architectures: those both list (none listed means the native one only,
// which the result keeps); flags: SPEC_ALLOW only if both have it (an
// unset list means runc's default, which has it), LOG and
// WAIT_KILLABLE_RECV if either has it.
func Intersect(a, b *specs.LinuxSeccomp) (*specs.LinuxSeccomp, error) {
	out, _, err := intersect(a, b)
	return out, err
}

// intersect is Intersect; exact is false where the result had to be more
// restrictive than the most restrictive of a and b.
func intersect(a, b *specs.LinuxSeccomp) (_ *specs.LinuxSeccomp, exact bool, _ error) {
	if a == nil || b == nil {
		return nil, false, fmt.Errorf("%w: seccomp intersection of a missing profile", errdefs.ErrInvalid)
	}
	fa, err := newFilter(a)
	if err != nil {
		return nil, false, err
	}
	fb, err := newFilter(b)
	if err != nil {
		return nil, false, err
	}
	out := &specs.LinuxSeccomp{Flags: mergeFlags(a.Flags, b.Flags)}
	if out.Architectures, err = mergeArchs(a.Architectures, b.Architectures); err != nil {
		return nil, false, err
	}
	def := worst(fa.def, fb.def)
	out.DefaultAction, out.DefaultErrnoRet = def.act, def.ret
	names := map[string]bool{}
	for n := range fa.rules {
		names[n] = true
	}
	for n := range fb.rules {
		names[n] = true
	}
	var rules []outRule
	exact = true
	for _, n := range slices.Sorted(mapsKeys(names)) {
		r, ok := mergeSyscall(n, fa.forName(n), fb.forName(n), def)
		rules = append(rules, r...)
		exact = exact && ok
	}
	out.Syscalls = groupRules(rules)
	return out, exact, nil
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// verdict is an action with its errno (ERRNO) or message (TRACE) value.
type verdict struct {
	act specs.LinuxSeccompAction
	ret *uint
}

func (v verdict) equal(w verdict) bool {
	if v.act != w.act {
		return false
	}
	if !hasRet(v.act) {
		return true
	}
	return retOf(v.ret) == retOf(w.ret) && (v.ret == nil) == (w.ret == nil)
}

func hasRet(a specs.LinuxSeccompAction) bool {
	return a == specs.ActErrno || a == specs.ActTrace
}

func retOf(p *uint) uint {
	if p == nil {
		return 0
	}
	return *p
}

// actionRank is the kernel's precedence of the actions (higher wins).
var actionRank = map[specs.LinuxSeccompAction]int{
	specs.ActAllow: 1, specs.ActLog: 2, specs.ActTrace: 3, specs.ActNotify: 4,
	specs.ActErrno: 5, specs.ActTrap: 6, specs.ActKill: 7, specs.ActKillThread: 7,
	specs.ActKillProcess: 8,
}

// worst is the more restrictive verdict; a tie keeps v.
func worst(v, w verdict) verdict {
	if actionRank[w.act] > actionRank[v.act] {
		return w
	}
	return v
}

// stricter: v is more restrictive than w, or as restrictive but another
// verdict (an ERRNO of another errno).
func stricter(v, w verdict) bool {
	if actionRank[v.act] != actionRank[w.act] {
		return actionRank[v.act] > actionRank[w.act]
	}
	return !v.equal(w)
}

// rule is one normalized rule: its conditions name distinct arguments,
// sorted by index.
type rule struct {
	v     verdict
	conds []specs.LinuxSeccompArg
}

// filter is a profile in the model: rules by name, default verdict.
type filter struct {
	def   verdict
	rules map[string][]rule
}

func newFilter(p *specs.LinuxSeccomp) (*filter, error) {
	f := &filter{def: verdict{act: p.DefaultAction, ret: p.DefaultErrnoRet}, rules: map[string][]rule{}}
	if _, ok := actionRank[f.def.act]; !ok {
		return nil, fmt.Errorf("%w: seccomp default action %.40q is unknown", errdefs.ErrInvalid, f.def.act)
	}
	for _, sc := range p.Syscalls {
		if _, ok := actionRank[sc.Action]; !ok {
			return nil, fmt.Errorf("%w: seccomp action %.40q is unknown", errdefs.ErrInvalid, sc.Action)
		}
		for _, r := range splitRule(verdict{act: sc.Action, ret: sc.ErrnoRet}, sc.Args) {
			for _, n := range sc.Names {
				f.rules[n] = append(f.rules[n], r)
			}
		}
	}
	return f, nil
}

// splitRule applies runc's reading: conditions naming one argument twice
// are alternatives (one rule each), else one conjunction.
func splitRule(v verdict, args []specs.LinuxSeccompArg) []rule {
	seen := map[uint]bool{}
	repeated := false
	for _, a := range args {
		repeated = repeated || seen[a.Index]
		seen[a.Index] = true
	}
	if !repeated {
		c := slices.Clone(args)
		sort.SliceStable(c, func(i, j int) bool { return c[i].Index < c[j].Index })
		return []rule{{v: v, conds: c}}
	}
	out := make([]rule, 0, len(args))
	for _, a := range args {
		out = append(out, rule{v: v, conds: []specs.LinuxSeccompArg{a}})
	}
	return out
}

// side is one filter's view of one system call: the verdict when none of
// its conditional rules match (fb: its unconditional rules', else the
// default), and the conditional rules that can change it (all of them
// without an unconditional rule; else those more restrictive than it).
type side struct {
	fb    verdict
	conds []rule
}

func (f *filter) forName(n string) side {
	s := side{fb: f.def}
	uncond := false
	for _, r := range f.rules[n] {
		if len(r.conds) == 0 {
			if !uncond {
				s.fb, uncond = r.v, true
			} else {
				s.fb = worst(s.fb, r.v)
			}
		}
	}
	for _, r := range f.rules[n] {
		if len(r.conds) > 0 && (!uncond || actionRank[r.v.act] > actionRank[s.fb.act]) {
			s.conds = append(s.conds, r)
		}
	}
	return s
}

// outRule is one rule of the result.
type outRule struct {
	name  string
	v     verdict
	conds []specs.LinuxSeccompArg
}

func condsKey(c []specs.LinuxSeccompArg) string {
	var b strings.Builder
	for _, a := range c {
		fmt.Fprintf(&b, "%d/%s/%d/%d;", a.Index, a.Op, a.Value, a.ValueTwo)
	}
	return b.String()
}

// groupRules writes the result's rules as few syscall entries, in a
// stable order: one per verdict and conditions, its names sorted.
func groupRules(rules []outRule) []specs.LinuxSyscall {
	type key struct {
		act   specs.LinuxSeccompAction
		ret   string
		conds string
	}
	idx := map[key]int{}
	var out []specs.LinuxSyscall
	for _, r := range rules {
		k := key{r.v.act, fmt.Sprint(r.v.ret != nil, retOf(r.v.ret)), condsKey(r.conds)}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			var ret *uint
			if r.v.ret != nil {
				v := *r.v.ret
				ret = &v
			}
			out = append(out, specs.LinuxSyscall{Action: r.v.act, ErrnoRet: ret, Args: slices.Clone(r.conds)})
		}
		if !slices.Contains(out[i].Names, r.name) {
			out[i].Names = append(out[i].Names, r.name)
		}
	}
	return out
}

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
// both a and b allow it (KEP-6061: a pulled profile and its base).
//
// Its model is what runc (specconv, libcontainer/seccomp) and libseccomp
// 2.5 make of a profile, per system call name: actions are normalised as
// runc does (KILL is KILL_THREAD; an ERRNO or TRACE without a value is
// EPERM; the value is cut to 16 bits); rules whose action equals the
// default are dropped (runc skips them); a rule naming one argument twice
// is one rule per condition (runc ORs them), else a conjunction. Then a
// name is Uncond(v) when an unconditional rule is left (libseccomp lets
// it override every conditional rule of the name; the strictest if
// several), Cond(X, R, F) when its conditional rules share one action X
// (X if a rule of R matches, else the default F), else ambiguous (which
// rule wins is libseccomp's tree order): read as Uncond of the strictest
// of its actions and the default, stricter than the profile itself.
//
// The result never gives one name an unconditional rule beside
// conditional ones, conditional rules of two actions, a rule whose action
// is its default, nor two conditions on one argument in a rule: runc
// would read each otherwise (see mergeName); it lists, with the default
// action, every name a or b lists that it needs no rule for (runc's
// ENOSYS stub, see intersect). Where the intersection
// cannot be written so, the name's verdict is the stricter of the two it
// takes, never weaker. Precedence is the kernel's: KILL_PROCESS >
// KILL_THREAD > TRAP > ERRNO > NOTIFY > TRACE > LOG > ALLOW; two ERRNO
// (or TRACE) verdicts with different values keep a's. Architectures:
// those both list (none listed means the native one only, which the
// result keeps); flags: SPEC_ALLOW only if both have it (an unset list
// means runc's default, which has it), LOG and WAIT_KILLABLE_RECV if
// either has it.
func Intersect(a, b *specs.LinuxSeccomp) (*specs.LinuxSeccomp, error) {
	out, _, err := intersect(a, b)
	return out, err
}

// intersect is Intersect; exact is false where the result had to be more
// restrictive than the more restrictive of a and b.
func intersect(a, b *specs.LinuxSeccomp) (_ *specs.LinuxSeccomp, exact bool, _ error) {
	if a == nil || b == nil {
		return nil, false, fmt.Errorf("%w: seccomp intersection of a missing profile", errdefs.ErrInvalid)
	}
	fa, err := newFilter(a)
	if err != nil {
		return nil, false, fmt.Errorf("the seccomp profile: %w", err)
	}
	fb, err := newFilter(b)
	if err != nil {
		return nil, false, fmt.Errorf("the base seccomp profile: %w", err)
	}
	out := &specs.LinuxSeccomp{Flags: mergeFlags(a.Flags, b.Flags)}
	if out.Architectures, err = mergeArchs(a.Architectures, b.Architectures); err != nil {
		return nil, false, err
	}
	def := worst(fa.def, fb.def)
	out.DefaultAction, out.DefaultErrnoRet = def.act, def.retPtr()
	names := map[string]bool{}
	for _, sc := range slices.Concat(a.Syscalls, b.Syscalls) {
		for _, n := range sc.Names {
			names[n] = true
		}
	}
	var rules []outRule
	var listed []string
	exact = fa.exact && fb.exact
	for _, n := range slices.Sorted(mapsKeys(names)) {
		r, ok := mergeName(n, fa.state(n), fb.state(n), def)
		if len(r) == 0 {
			listed = append(listed, n)
		}
		rules = append(rules, r...)
		exact = exact && ok
	}
	out.Syscalls = groupRules(rules)
	if len(listed) > 0 {
		// runc skips these rules of the default action, but its ENOSYS
		// stub counts their names: a call numbered above every name a
		// profile lists gets ENOSYS, not a non-allowing default. Listing
		// every name a or b lists keeps that bound where it was.
		out.Syscalls = append(out.Syscalls, specs.LinuxSyscall{Names: listed, Action: def.act, ErrnoRet: def.retPtr()})
	}
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

// verdict is a normalised action with its errno (ERRNO) or message
// (TRACE) value, as runc hands it to libseccomp: two verdicts are equal
// exactly when runc's actions are.
type verdict struct {
	act specs.LinuxSeccompAction
	ret uint16
}

// newVerdict normalises an action as runc's getAction does.
func newVerdict(act specs.LinuxSeccompAction, ret *uint) (verdict, error) {
	if _, ok := actionRank[act]; !ok {
		return verdict{}, fmt.Errorf("%w: seccomp action %.40q is unknown", errdefs.ErrInvalid, act)
	}
	switch {
	case act == specs.ActKill:
		return verdict{act: specs.ActKillThread}, nil
	case !hasRet(act):
		return verdict{act: act}, nil
	case ret == nil:
		return verdict{act: act, ret: 1}, nil // EPERM
	}
	return verdict{act: act, ret: uint16(*ret)}, nil //nolint:gosec // G115: runc cuts it to 16 bits so
}

func (v verdict) retPtr() *uint {
	if !hasRet(v.act) {
		return nil
	}
	r := uint(v.ret)
	return &r
}

func hasRet(a specs.LinuxSeccompAction) bool {
	return a == specs.ActErrno || a == specs.ActTrace
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

// rule is one normalised conditional rule: its conditions name distinct
// arguments, sorted by index.
type rule struct {
	conds []specs.LinuxSeccompArg
}

func (r rule) key() string { return condsKey(r.conds) }

// splitRule applies runc's reading: conditions naming one argument twice
// are alternatives (one rule each), else one conjunction.
func splitRule(args []specs.LinuxSeccompArg) []rule {
	seen := map[uint]bool{}
	repeated := false
	for _, a := range args {
		repeated = repeated || seen[a.Index]
		seen[a.Index] = true
	}
	if !repeated {
		c := slices.Clone(args)
		sort.SliceStable(c, func(i, j int) bool { return c[i].Index < c[j].Index })
		return []rule{{conds: c}}
	}
	out := make([]rule, 0, len(args))
	for _, a := range args {
		out = append(out, rule{conds: []specs.LinuxSeccompArg{a}})
	}
	return out
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
		v     verdict
		conds string
	}
	idx := map[key]int{}
	var out []specs.LinuxSyscall
	for _, r := range rules {
		k := key{r.v, condsKey(r.conds)}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, specs.LinuxSyscall{Action: r.v.act, ErrnoRet: r.v.retPtr(), Args: slices.Clone(r.conds)})
		}
		if !slices.Contains(out[i].Names, r.name) {
			out[i].Names = append(out[i].Names, r.name)
		}
	}
	return out
}

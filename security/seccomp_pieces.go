package security

import (
	"fmt"
	"math"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/internal/errdefs"
)

// state is what one profile makes of one system call name: uncond, v;
// else v if one of rules matches, else def (Cond(v, rules, def)).
type state struct {
	uncond bool
	v      verdict
	rules  []rule // sorted by key, no duplicate
	def    verdict
}

// filter is a profile in the model: the states of the names it lists
// (another name is Uncond(def)); exact is false where a state is stricter
// than what runc and libseccomp make of the profile.
type filter struct {
	def   verdict
	names map[string]state
	exact bool
}

func (f *filter) state(n string) state {
	if s, ok := f.names[n]; ok {
		return s
	}
	return state{uncond: true, v: f.def}
}

// newFilter normalises p (see Intersect).
func newFilter(p *specs.LinuxSeccomp) (*filter, error) {
	def, err := newVerdict(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, fmt.Errorf("default action: %w", err)
	}
	type named struct {
		unconds []verdict
		conds   map[verdict][]rule
	}
	byName := map[string]*named{}
	for _, sc := range p.Syscalls {
		v, err := newVerdict(sc.Action, sc.ErrnoRet)
		if err != nil {
			return nil, err
		}
		if v == def { // runc skips it
			continue
		}
		for _, n := range sc.Names {
			nm := byName[n]
			if nm == nil {
				nm = &named{conds: map[verdict][]rule{}}
				byName[n] = nm
			}
			if alwaysHolds(sc.Args) {
				nm.unconds = append(nm.unconds, v)
			} else {
				nm.conds[v] = append(nm.conds[v], splitRule(sc.Args)...)
			}
		}
	}
	f := &filter{def: def, names: map[string]state{}, exact: true}
	for n, nm := range byName {
		s, exact := settle(nm.unconds, nm.conds, def)
		f.names[n] = s
		f.exact = f.exact && exact
	}
	return f, nil
}

// alwaysHolds: the conditions hold for any arguments (none, or each of
// them trivially: >= 0, <= the largest value, masked by 0 equal to 0), as
// libseccomp reads them: an unconditional rule.
func alwaysHolds(args []specs.LinuxSeccompArg) bool {
	for _, c := range args {
		switch {
		case c.Op == specs.OpGreaterEqual && c.Value == 0:
		case c.Op == specs.OpLessEqual && c.Value == math.MaxUint64:
		case c.Op == specs.OpMaskedEqual && c.Value == 0 && c.ValueTwo == 0:
		default:
			return false
		}
	}
	return true
}

// settle is one name's state, given its rules left after runc's drop.
func settle(unconds []verdict, conds map[verdict][]rule, def verdict) (state, bool) {
	if len(unconds) > 0 {
		// Several actions here (unconditional rules of two actions, or
		// conditional ones beside them, which libseccomp does not always
		// let the unconditional one override): the strictest of them.
		v := unconds[0]
		for _, u := range unconds[1:] {
			v = worst(v, u)
		}
		exact := !slices.ContainsFunc(unconds, func(u verdict) bool { return u != v })
		for x := range conds {
			if actionRank[x.act] >= actionRank[v.act] && x != v {
				v, exact = worst(v, x), false
			}
		}
		return state{uncond: true, v: v}, exact
	}
	if len(conds) == 1 {
		for x, rs := range conds {
			return state{v: x, rules: dedupRules(rs), def: def}, true
		}
	}
	v := def // ambiguous: libseccomp's tree order picks; the strictest
	for x := range conds {
		v = worst(v, x)
	}
	return state{uncond: true, v: v}, false
}

func dedupRules(rs []rule) []rule {
	out := slices.Clone(rs)
	slices.SortFunc(out, func(a, b rule) int {
		switch ka, kb := a.key(), b.key(); {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return slices.CompactFunc(out, func(a, b rule) bool { return a.key() == b.key() })
}

func sameRules(a, b []rule) bool {
	return slices.EqualFunc(a, b, func(x, y rule) bool { return x.key() == y.key() })
}

// mergeName writes the result's rules for the name n, given a's and b's
// states of it and the result's default d; exact is false where it is
// more restrictive than the more restrictive of a and b. On a tie the
// verdict of a is kept (worst's first argument).
func mergeName(n string, sa, sb state, d verdict) (_ []outRule, exact bool) {
	switch {
	case sa.uncond && sb.uncond:
		return uncondRule(n, worst(sa.v, sb.v), d), true
	case sa.uncond:
		return emitCond(n, worst(sa.v, sb.v), sb.rules, worst(sa.v, sb.def), d)
	case sb.uncond:
		return emitCond(n, worst(sa.v, sb.v), sa.rules, worst(sa.def, sb.v), d)
	case sameRules(sa.rules, sb.rules):
		return emitCond(n, worst(sa.v, sb.v), sa.rules, worst(sa.def, sb.def), d)
	}
	// Two different rule sets: where only one matches, the verdict is
	// that one's X with the other's default, which one set of rules of
	// one action cannot state in general: the strictest of all.
	v := worst(worst(sa.v, sa.def), worst(sb.v, sb.def))
	return uncondRule(n, v, d), false
}

// uncondRule is the rule giving n the verdict v, none if v is the default.
func uncondRule(n string, v, d verdict) []outRule {
	if v == d {
		return nil
	}
	return []outRule{{name: n, v: v}}
}

// emitCond writes n's verdict y where one of rs matches, else z.
func emitCond(n string, y verdict, rs []rule, z, d verdict) ([]outRule, bool) {
	switch {
	case y == z:
		return uncondRule(n, y, d), true
	case z == d:
		out := make([]outRule, 0, len(rs))
		for _, r := range rs {
			out = append(out, outRule{name: n, v: y, conds: r.conds})
		}
		return out, true
	case y == d:
		if neg, ok := complement(rs); ok {
			out := make([]outRule, 0, len(neg))
			for _, c := range neg {
				out = append(out, outRule{name: n, v: z, conds: []specs.LinuxSeccompArg{c}})
			}
			return out, true
		}
	}
	return uncondRule(n, worst(y, z), d), false
}

// complement: where the one rule of rs does not match, as alternatives
// of one condition each; false unless rs is one rule of conditions that
// each have an exact complement.
func complement(rs []rule) ([]specs.LinuxSeccompArg, bool) {
	if len(rs) != 1 {
		return nil, false
	}
	ops := map[specs.LinuxSeccompOperator]specs.LinuxSeccompOperator{
		specs.OpEqualTo: specs.OpNotEqual, specs.OpNotEqual: specs.OpEqualTo,
		specs.OpLessThan: specs.OpGreaterEqual, specs.OpGreaterEqual: specs.OpLessThan,
		specs.OpLessEqual: specs.OpGreaterThan, specs.OpGreaterThan: specs.OpLessEqual,
	}
	out := make([]specs.LinuxSeccompArg, 0, len(rs[0].conds))
	for _, c := range rs[0].conds {
		op, ok := ops[c.Op]
		if !ok {
			return nil, false
		}
		out = append(out, specs.LinuxSeccompArg{Index: c.Index, Op: op, Value: c.Value})
	}
	return out, true
}

// mergeFlags: SPEC_ALLOW only if both have it (nil: runc's default, with
// it); LOG and WAIT_KILLABLE_RECV if either has it; TSYNC is dropped (runc
// ignores it). Never nil, so runc adds nothing.
func mergeFlags(a, b []specs.LinuxSeccompFlag) []specs.LinuxSeccompFlag {
	orDefault := func(f []specs.LinuxSeccompFlag) []specs.LinuxSeccompFlag {
		if f == nil {
			return []specs.LinuxSeccompFlag{specs.LinuxSeccompFlagSpecAllow}
		}
		return f
	}
	a, b = orDefault(a), orDefault(b)
	out := []specs.LinuxSeccompFlag{}
	if slices.Contains(a, specs.LinuxSeccompFlagSpecAllow) && slices.Contains(b, specs.LinuxSeccompFlagSpecAllow) {
		out = append(out, specs.LinuxSeccompFlagSpecAllow)
	}
	for _, f := range []specs.LinuxSeccompFlag{specs.LinuxSeccompFlagLog, specs.LinuxSeccompFlagWaitKillableRecv} {
		if slices.Contains(a, f) || slices.Contains(b, f) {
			out = append(out, f)
		}
	}
	return out
}

// mergeArchs: the architectures both list; none listed (the native one
// only) wins, as the narrower choice.
func mergeArchs(a, b []specs.Arch) ([]specs.Arch, error) {
	if len(a) == 0 || len(b) == 0 {
		return nil, nil
	}
	var out []specs.Arch
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the seccomp profile and its base have no architecture in common", errdefs.ErrInvalid)
	}
	return out, nil
}

package security

import (
	"fmt"
	"math"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/internal/errdefs"
)

// maxPieces bounds the rules one system call's complement may take.
const maxPieces = 256

type piece struct {
	v     verdict
	conds []specs.LinuxSeccompArg
}

// mergeSyscall writes the result's rules for system call n, given a's and
// b's views of it and the result's default D; exact is false where it had
// to be more restrictive than needed.
func mergeSyscall(n string, sa, sb side, d verdict) (_ []outRule, exact bool) {
	fbM := worst(sa.fb, sb.fb)
	pieces, exact := conditionalPieces(sa, sb)
	var out []outRule
	for _, p := range pieces {
		out = append(out, outRule{name: n, v: p.v, conds: p.conds})
	}
	switch {
	case fbM.equal(d):
		return out, exact
	case len(pieces) == 0 || actionRank[fbM.act] > actionRank[d.act]:
		// Every piece is at least as restrictive as fbM here (a piece
		// below it would need fbM from an unconditional rule above both
		// defaults, which only raises the pieces too).
		return append(out, outRule{name: n, v: fbM}), exact
	}
	// fbM is less restrictive than the default: it holds where no piece
	// matches, written as the complement of the pieces.
	conds := make([][]specs.LinuxSeccompArg, len(pieces))
	for i, p := range pieces {
		conds[i] = p.conds
	}
	rest, ok := complement(conds)
	if !ok {
		return out, false // unmatched calls take the (stricter) default
	}
	for _, c := range rest {
		out = append(out, outRule{name: n, v: fbM, conds: c})
	}
	return out, exact
}

// conditionalPieces are the conditional rules of the result for one call.
func conditionalPieces(sa, sb side) ([]piece, bool) {
	var out []piece
	exact := true
	for _, ra := range sa.conds {
		out = append(out, piece{v: worst(ra.v, sb.fb), conds: ra.conds})
	}
	for _, rb := range sb.conds {
		out = append(out, piece{v: worst(sa.fb, rb.v), conds: rb.conds})
		for _, ra := range sa.conds {
			// Both match: the pair's verdict; the single pieces above
			// match too, and where one is stricter it is not exact.
			v := worst(ra.v, rb.v)
			c, empty, ok := conjoin(ra.conds, rb.conds)
			if empty {
				continue
			}
			if stricter(worst(ra.v, sb.fb), v) || stricter(worst(sa.fb, rb.v), v) {
				exact = false
			}
			if !ok {
				exact = false // the single pieces' stricter verdicts hold
				continue
			}
			out = append(out, piece{v: v, conds: c})
		}
	}
	return out, exact
}

// complement is the conditions under which none of conds holds, as
// alternatives; ok is false when seccomp cannot state it.
func complement(conds [][]specs.LinuxSeccompArg) ([][]specs.LinuxSeccompArg, bool) {
	result := [][]specs.LinuxSeccompArg{nil}
	for _, c := range conds {
		var next [][]specs.LinuxSeccompArg
		for _, a := range c {
			na, ok := negate(a)
			if !ok {
				return nil, false
			}
			for _, r := range result {
				j, empty, ok := conjoin(r, []specs.LinuxSeccompArg{na})
				if !ok {
					return nil, false
				}
				if !empty {
					next = append(next, j)
				}
			}
			if len(next) > maxPieces {
				return nil, false
			}
		}
		result = next
	}
	return result, true
}

func negate(a specs.LinuxSeccompArg) (specs.LinuxSeccompArg, bool) {
	ops := map[specs.LinuxSeccompOperator]specs.LinuxSeccompOperator{
		specs.OpEqualTo: specs.OpNotEqual, specs.OpNotEqual: specs.OpEqualTo,
		specs.OpLessThan: specs.OpGreaterEqual, specs.OpGreaterEqual: specs.OpLessThan,
		specs.OpLessEqual: specs.OpGreaterThan, specs.OpGreaterThan: specs.OpLessEqual,
	}
	op, ok := ops[a.Op]
	return specs.LinuxSeccompArg{Index: a.Index, Op: op, Value: a.Value}, ok
}

// conjoin is the conjunction of two sorted, one-per-index condition
// lists; empty: it never holds; ok false: seccomp cannot state it.
func conjoin(a, b []specs.LinuxSeccompArg) (out []specs.LinuxSeccompArg, empty, ok bool) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].Index < b[j].Index):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].Index < a[i].Index:
			out = append(out, b[j])
			j++
		default:
			c, e, k := combine(a[i], b[j])
			if e || !k {
				return nil, e, k
			}
			out = append(out, c)
			i++
			j++
		}
	}
	return out, false, true
}

// holds evaluates one condition on an argument's value.
func holds(c specs.LinuxSeccompArg, v uint64) bool {
	switch c.Op {
	case specs.OpEqualTo:
		return v == c.Value
	case specs.OpNotEqual:
		return v != c.Value
	case specs.OpLessThan:
		return v < c.Value
	case specs.OpLessEqual:
		return v <= c.Value
	case specs.OpGreaterThan:
		return v > c.Value
	case specs.OpGreaterEqual:
		return v >= c.Value
	case specs.OpMaskedEqual:
		return v&c.Value == c.ValueTwo
	}
	return false
}

// interval is the values an ordering condition admits, [lo, hi].
func interval(c specs.LinuxSeccompArg) (lo, hi uint64, empty, ok bool) {
	switch c.Op {
	case specs.OpLessThan:
		return 0, c.Value - 1, c.Value == 0, true
	case specs.OpLessEqual:
		return 0, c.Value, false, true
	case specs.OpGreaterThan:
		return c.Value + 1, math.MaxUint64, c.Value == math.MaxUint64, true
	case specs.OpGreaterEqual:
		return c.Value, math.MaxUint64, false, true
	}
	return 0, 0, false, false
}

// combine states two conditions on one argument as one, if it can.
func combine(x, y specs.LinuxSeccompArg) (_ specs.LinuxSeccompArg, empty, ok bool) {
	if x == y {
		return x, false, true
	}
	if y.Op == specs.OpEqualTo {
		x, y = y, x
	}
	if x.Op == specs.OpEqualTo {
		return x, !holds(y, x.Value), true
	}
	if y.Op == specs.OpNotEqual {
		x, y = y, x
	}
	lo2, hi2, e2, ok2 := interval(y)
	if !ok2 {
		return x, false, false
	}
	if e2 {
		return x, true, true
	}
	if x.Op == specs.OpNotEqual {
		switch {
		case x.Value < lo2 || x.Value > hi2:
			return y, false, true
		case lo2 == hi2:
			return x, true, true
		}
		return x, false, false
	}
	lo1, hi1, e1, ok1 := interval(x)
	if !ok1 {
		return x, false, false
	}
	return fromInterval(x.Index, max(lo1, lo2), min(hi1, hi2), e1)
}

func fromInterval(idx uint, lo, hi uint64, empty bool) (specs.LinuxSeccompArg, bool, bool) {
	c := specs.LinuxSeccompArg{Index: idx}
	switch {
	case empty || lo > hi:
		return c, true, true
	case lo == hi:
		c.Op, c.Value = specs.OpEqualTo, lo
	case lo == 0:
		c.Op, c.Value = specs.OpLessEqual, hi
	case hi == math.MaxUint64:
		c.Op, c.Value = specs.OpGreaterEqual, lo
	default:
		return c, false, false
	}
	return c, false, true
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

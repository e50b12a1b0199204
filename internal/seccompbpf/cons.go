package seccompbpf

import (
	"math/bits"
	"slices"
)

// cons are constraints on a 32-bit value x: lo <= x <= hi, the bits of set
// set, those of clear clear, and x none of not.
type cons struct {
	lo, hi     uint32
	set, clear uint32
	not        []uint32
}

// with is c and the outcome (taken or not) of the conditional jump in.
func (c cons) with(in insn, taken bool) cons {
	c.not = slices.Clone(c.not)
	switch {
	case in.code == jeqK && taken:
		c.lo, c.hi = max(c.lo, in.k), min(c.hi, in.k)
	case in.code == jeqK:
		c.not = append(c.not, in.k)
	case in.code == jgtK && taken:
		if in.k == ^uint32(0) {
			c.lo, c.hi = 1, 0
		} else {
			c.lo = max(c.lo, in.k+1)
		}
	case in.code == jgtK:
		c.hi = min(c.hi, in.k)
	case in.code == jgeK && taken:
		c.lo = max(c.lo, in.k)
	case in.code == jgeK:
		if in.k == 0 {
			c.lo, c.hi = 1, 0
		} else {
			c.hi = min(c.hi, in.k-1)
		}
	case taken: // jset of one bit
		c.set |= in.k
	default:
		c.clear |= in.k
	}
	return c
}

// and is the conjunction of c and d.
func (c cons) and(d cons) cons {
	return cons{max(c.lo, d.lo), min(c.hi, d.hi), c.set | d.set, c.clear | d.clear, append(slices.Clone(c.not), d.not...)}
}

// sat reports whether some x meets c.
func (c cons) sat() bool {
	if c.lo > c.hi || c.set&c.clear != 0 {
		return false
	}
	x, ok := c.fit(c.lo)
	for ok && slices.Contains(c.not, x) {
		if x == c.hi {
			return false
		}
		x, ok = c.fit(x + 1)
	}
	return ok
}

// fit is the least x >= v, x <= hi, with c's bits; false if none. x is
// set with the free bits (those neither set nor clear) deposited from a
// counter y, increasing in y: a binary search finds the least.
func (c cons) fit(v uint32) (uint32, bool) {
	free := ^(c.set | c.clear)
	n := bits.OnesCount32(free)
	deposit := func(y uint64) uint32 {
		x := c.set
		for b, f := 0, free; f != 0; f &= f - 1 {
			if y&(1<<b) != 0 {
				x |= f & -f
			}
			b++
		}
		return x
	}
	lo, hi := uint64(0), uint64(1)<<n // least y in [lo, hi) with deposit(y) >= v
	for lo < hi {
		mid := (lo + hi) / 2
		if deposit(mid) >= v {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == uint64(1)<<n {
		return 0, false
	}
	x := deposit(lo)
	return x, x <= c.hi
}

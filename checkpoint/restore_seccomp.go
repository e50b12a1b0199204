package checkpoint

import (
	"fmt"

	criucore "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/internal/seccompbpf"
)

// seccompChainOf is the filter chain, newest first, that libcontainer
// installs for a spec's seccomp profile (internal/seccompbpf; tests
// replace it).
var seccompChainOf = func(sc *specs.LinuxSeccomp) ([]seccompbpf.Filter, error) {
	cfg, err := specconv.SetupSeccomp(sc)
	if err != nil {
		return nil, fmt.Errorf("%w: seccomp profile: %v", ErrInvalid, err)
	}
	chain, err := seccompbpf.Of(cfg)
	if err != nil {
		return nil, fmt.Errorf("build the request's seccomp filter: %w", err)
	}
	return chain, nil
}

// checkSeccomp refuses a thread that CRIU would not restore under exactly
// the filter chain want (the request's): CRIU installs the archive's own
// filters (seccomp.img) as root. Every thread must be in filter mode with
// a chain of want's programs (byte for byte but for the order of runc's
// ENOSYS stub, seccompbpf.Equivalent; flags too, but for TSYNC, which
// CRIU adds itself), or, not in filter mode, be a thread whose task leader's
// chain is want with TSYNC (CRIU's dump of threads that share the
// leader's filters). The legacy per-task seccomp fields, which CRIU
// prefers to the thread's, are refused outright.
func (ts *ckptTasks) checkSeccomp(tid uint32, want []seccompbpf.Filter) error {
	ce := ts.cores[tid]
	if tc := ce.GetTc(); tc != nil && (tc.OldSeccompMode != nil || tc.OldSeccompFilter != nil) {
		return fmt.Errorf("has legacy seccomp fields, which CRIU would restore in place of the thread's")
	}
	th := ce.GetThreadCore()
	switch th.GetSeccompMode() {
	case criucore.SeccompMode_filter:
		return ts.checkChain(th.GetSeccompFilter(), want, false)
	case criucore.SeccompMode_disabled:
		if len(want) == 0 {
			return nil
		}
		leader, ok := ts.leader[tid]
		if !ok || leader == tid || ts.cores[leader] == nil ||
			ts.cores[leader].GetThreadCore().GetSeccompMode() != criucore.SeccompMode_filter {
			return fmt.Errorf("runs without the seccomp filter the request gives")
		}
		if err := ts.checkChain(ts.cores[leader].GetThreadCore().GetSeccompFilter(), want, true); err != nil {
			return fmt.Errorf("runs without a seccomp filter and its task's leader %d %v", leader, err)
		}
		return nil
	default:
		return fmt.Errorf("has seccomp mode %v, not the filter the request gives", th.GetSeccompMode())
	}
}

// checkChain compares the chain at index top of seccomp.img (newest
// first, following prev) with want; tsync requires every filter to carry
// SECCOMP_FILTER_FLAG_TSYNC.
func (ts *ckptTasks) checkChain(top uint32, want []seccompbpf.Filter, tsync bool) error {
	if len(want) == 0 {
		return fmt.Errorf("runs under a seccomp filter; the request gives none")
	}
	i, hasNext := top, true
	for n, w := range want {
		if !hasNext || int(i) >= len(ts.filters) {
			return fmt.Errorf("runs under %d seccomp filters, not the request's %d", n, len(want))
		}
		f := ts.filters[i]
		switch {
		case !seccompbpf.Equivalent(f.GetFilter(), w.Prog):
			return fmt.Errorf("runs under a seccomp filter (%d of the chain, %d instructions) that is not the request's (%d instructions)",
				n, len(f.GetFilter())/8, len(w.Prog)/8)
		case f.GetFlags()&^seccompbpf.FlagTSync != w.Flags:
			return fmt.Errorf("runs under seccomp filter %d with flags %#x, not the request's %#x", n, f.GetFlags(), w.Flags)
		case tsync && f.GetFlags()&seccompbpf.FlagTSync == 0:
			return fmt.Errorf("has a seccomp filter %d that its threads do not share (no TSYNC)", n)
		}
		i, hasNext = f.GetPrev(), f.Prev != nil
	}
	if hasNext {
		return fmt.Errorf("runs under more seccomp filters than the request's %d", len(want))
	}
	return nil
}

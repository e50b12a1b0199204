package checkpoint

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	criucore "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"github.com/moby/sys/capability"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/internal/seccompbpf"
)

// checkCheckpointCreds refuses a checkpoint whose processes would hold
// more than the new container's spec gives: CRIU restores credentials,
// no_new_privs, seccomp filters and LSM labels from the images, as root,
// whatever the spec says, so a crafted (or simply more privileged) archive
// would otherwise run with them. See checkTask, checkSeccomp and checkLSM.
func (x *restoration) checkCheckpointCreds(context.Context) error {
	spec := x.t.Spec()
	var sc *specs.LinuxSeccomp
	if spec.Linux != nil {
		sc = spec.Linux.Seccomp
	}
	want, err := seccompChainOf(sc)
	if err != nil {
		return err
	}
	return checkCredsAgainst(x.imagesDir(), spec, want)
}

// checkCredsAgainst checks every thread of the images against spec and
// the filter chain its seccomp profile yields (want).
func checkCredsAgainst(images string, spec *specs.Spec, want []seccompbpf.Filter) error {
	p := spec.Process
	if p == nil {
		return fmt.Errorf("%w: spec has no process", ErrInvalid)
	}
	ceil, err := capCeilings(p)
	if err != nil {
		return err
	}
	ts, err := readCkptTasks(images) // restore_images.go
	if err != nil {
		return err
	}
	if ts.aaPolicy {
		return fmt.Errorf("%w: checkpoint holds AppArmor LSM policy (apparmor.img), which CRIU would load into the kernel", ErrFailedPrecondition)
	}
	for _, tid := range slices.Sorted(maps.Keys(ts.cores)) {
		th := ts.cores[tid].GetThreadCore()
		err := checkTask(th, p, ceil)
		if err == nil {
			err = checkLSM(th.GetCreds(), p) // restore_lsm.go
		}
		if err == nil {
			err = ts.checkSeccomp(tid, want) // restore_seccomp.go
		}
		if err != nil {
			return fmt.Errorf("%w: checkpointed task %d (%s) %v", ErrFailedPrecondition, tid, th.GetComm(), err)
		}
	}
	return nil
}

// capSets are a task's five capability sets, by name.
var capSets = []string{"permitted", "effective", "inheritable", "ambient", "bounding"}

// capCeilings is the most each capability set of a task of the spec's
// process may hold: what the process has after its execve, or can give
// itself. Root keeps its bounding set in all of them; any other user
// keeps only its ambient capabilities permitted and effective (execve
// clears the rest; a setuid or file-capability binary that gave it more
// is refused: the request does not give it), its inheritable and ambient
// sets as the spec has them.
func capCeilings(p *specs.Process) (map[string]uint64, error) {
	var masks [3]uint64
	for i, list := range []func(*specs.LinuxCapabilities) []string{
		func(c *specs.LinuxCapabilities) []string { return c.Bounding },
		func(c *specs.LinuxCapabilities) []string { return c.Inheritable },
		func(c *specs.LinuxCapabilities) []string { return c.Ambient },
	} {
		m, err := capMask(capsOf(p, list))
		if err != nil {
			return nil, err
		}
		masks[i] = m
	}
	bnd, inh, amb := masks[0], masks[1], masks[2]&masks[0]
	if p.User.UID == 0 {
		return map[string]uint64{"permitted": bnd, "effective": bnd, "inheritable": bnd, "ambient": bnd, "bounding": bnd}, nil
	}
	return map[string]uint64{"permitted": amb, "effective": amb, "inheritable": inh, "ambient": amb, "bounding": bnd}, nil
}

// checkTask refuses a thread whose credentials exceed the spec's process:
// a capability set beyond its ceiling, no no_new_privs where the spec sets
// it, and, unless the ceiling lets the task switch IDs itself (CAP_SETUID,
// CAP_SETGID permitted), user or group IDs, or supplementary groups, that
// are not the spec's.
func checkTask(tc *criucore.ThreadCoreEntry, p *specs.Process, ceil map[string]uint64) error {
	cr := tc.GetCreds()
	if cr == nil {
		return fmt.Errorf("has no credentials")
	}
	sets := map[string][]uint32{
		"permitted": cr.GetCapPrm(), "effective": cr.GetCapEff(), "bounding": cr.GetCapBnd(),
		"inheritable": cr.GetCapInh(), "ambient": cr.GetCapAmb(),
	}
	for _, name := range capSets {
		if extra := words(sets[name]) &^ ceil[name]; extra != 0 {
			return fmt.Errorf("has %s capabilities %#x the container's process may not have", name, extra)
		}
	}
	if p.NoNewPrivileges && cr.GetNoNewPrivs() == 0 {
		return fmt.Errorf("lacks no_new_privs, which the container sets")
	}
	if ceil["permitted"]&(1<<uint(capability.CAP_SETUID)) == 0 {
		for _, id := range []uint32{cr.GetUid(), cr.GetEuid(), cr.GetSuid(), cr.GetFsuid()} {
			if id != p.User.UID {
				return fmt.Errorf("runs as uid %d, not the container's %d", id, p.User.UID)
			}
		}
	}
	if ceil["permitted"]&(1<<uint(capability.CAP_SETGID)) == 0 {
		for _, id := range []uint32{cr.GetGid(), cr.GetEgid(), cr.GetSgid(), cr.GetFsgid()} {
			if id != p.User.GID {
				return fmt.Errorf("runs as gid %d, not the container's %d", id, p.User.GID)
			}
		}
		for _, g := range cr.GetGroups() {
			if g != p.User.GID && !slices.Contains(p.User.AdditionalGids, g) {
				return fmt.Errorf("is in group %d, which the container's process is not", g)
			}
		}
	}
	return nil
}

// capsOf is one of the spec process's capability lists.
func capsOf(p *specs.Process, set func(*specs.LinuxCapabilities) []string) []string {
	if p.Capabilities == nil {
		return nil
	}
	return set(p.Capabilities)
}

// words joins CRIU's 32-bit capability words into one mask.
func words(set []uint32) uint64 {
	var m uint64
	for i, w := range set {
		if i < 2 {
			m |= uint64(w) << (32 * i)
		}
	}
	return m
}

// capMask is the mask of capability names ("CAP_NET_ADMIN").
func capMask(names []string) (uint64, error) {
	var m uint64
	for _, n := range names {
		v, ok := capByName[strings.ToLower(strings.TrimPrefix(n, "CAP_"))]
		if !ok {
			return 0, fmt.Errorf("%w: unknown capability %q", ErrInvalid, n)
		}
		m |= 1 << uint(v)
	}
	return m, nil
}

var capByName = func() map[string]capability.Cap {
	out := map[string]capability.Cap{}
	for _, c := range capability.ListKnown() {
		out[c.String()] = c
	}
	return out
}()

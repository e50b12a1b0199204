package container

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/checkpoint-restore/go-criu/v8/crit"
	criucore "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"github.com/moby/sys/capability"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// checkCheckpointCreds refuses a checkpoint whose processes hold more than
// the new container's spec allows: CRIU restores credentials, seccomp mode
// and no_new_privs from the images, whatever the spec says, so a crafted
// (or simply more privileged) archive would otherwise run with them. Every
// task's capability sets must lie within the spec's bounding set; with
// no_new_privs or a seccomp profile in the spec the tasks must have them;
// without CAP_SETUID/CAP_SETGID their IDs must be the spec's.
func (c *creation) checkCheckpointCreds(context.Context) error {
	return checkCredsAgainst(filepath.Join(c.m.ctrStateDir(c.rec.ID), checkpointImagesDir), c.spec)
}

func checkCredsAgainst(images string, spec *specs.Spec) error {
	p := spec.Process
	if p == nil {
		return fmt.Errorf("%w: spec has no process", ErrInvalid)
	}
	var bounding []string
	if p.Capabilities != nil {
		bounding = p.Capabilities.Bounding
	}
	allowed, err := capMask(bounding)
	if err != nil {
		return err
	}
	cores, err := filepath.Glob(filepath.Join(images, "core-*.img"))
	if err != nil || len(cores) == 0 {
		return fmt.Errorf("%w: checkpoint holds no task (core-*.img)", ErrInvalid)
	}
	for _, path := range cores {
		tc, err := readThreadCore(path)
		if err != nil {
			return fmt.Errorf("%w: checkpoint image %s: %v", ErrInvalid, filepath.Base(path), err)
		}
		if err := checkTask(tc, p, spec, allowed); err != nil {
			return fmt.Errorf("%w: checkpointed task %s (%s) %v", ErrFailedPrecondition,
				strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "core-"), ".img"), tc.GetComm(), err)
		}
	}
	return nil
}

func checkTask(tc *criucore.ThreadCoreEntry, p *specs.Process, spec *specs.Spec, allowed uint64) error {
	cr := tc.GetCreds()
	if cr == nil {
		return fmt.Errorf("has no credentials")
	}
	for name, set := range map[string][]uint32{
		"permitted": cr.GetCapPrm(), "effective": cr.GetCapEff(), "bounding": cr.GetCapBnd(),
		"inheritable": cr.GetCapInh(), "ambient": cr.GetCapAmb(),
	} {
		if extra := words(set) &^ allowed; extra != 0 {
			return fmt.Errorf("has %s capabilities %#x the container may not have", name, extra)
		}
	}
	if p.NoNewPrivileges && cr.GetNoNewPrivs() == 0 {
		return fmt.Errorf("lacks no_new_privs, which the container sets")
	}
	if spec.Linux != nil && spec.Linux.Seccomp != nil && tc.GetSeccompMode() != criucore.SeccompMode_filter {
		return fmt.Errorf("runs without the seccomp filter the container has")
	}
	// A non-root no_new_privs process gains no IDs, groups or capabilities
	// beyond its ambient set (no setuid binary, no file capability helps
	// it), whatever the bounding set holds.
	locked := p.NoNewPrivileges && p.User.UID != 0
	if locked {
		ambient, err := capMask(capsOf(p, func(c *specs.LinuxCapabilities) []string { return c.Ambient }))
		if err != nil {
			return err
		}
		if extra := (words(cr.GetCapPrm()) | words(cr.GetCapEff())) &^ ambient; extra != 0 {
			return fmt.Errorf("has capabilities %#x a non-root no_new_privs container cannot hold", extra)
		}
		allowed &= ambient // for the ID checks below
	}
	if allowed&(1<<uint(capability.CAP_SETGID)) == 0 {
		for _, g := range cr.GetGroups() {
			if g != p.User.GID && !slices.Contains(p.User.AdditionalGids, g) {
				return fmt.Errorf("is in group %d, which the container's process is not", g)
			}
		}
	}
	if allowed&(1<<uint(capability.CAP_SETUID)) == 0 {
		for _, id := range []uint32{cr.GetUid(), cr.GetEuid(), cr.GetSuid(), cr.GetFsuid()} {
			if id != p.User.UID {
				return fmt.Errorf("runs as uid %d, not the container's %d", id, p.User.UID)
			}
		}
	}
	if allowed&(1<<uint(capability.CAP_SETGID)) == 0 {
		for _, id := range []uint32{cr.GetGid(), cr.GetEgid(), cr.GetSgid(), cr.GetFsgid()} {
			if id != p.User.GID {
				return fmt.Errorf("runs as gid %d, not the container's %d", id, p.User.GID)
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

// readThreadCore decodes the thread core of a core-<pid>.img.
func readThreadCore(path string) (*criucore.ThreadCoreEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	img, err := crit.New(f, nil, "", false, true).Decode(&criucore.CoreEntry{})
	if err != nil {
		return nil, err
	}
	if len(img.Entries) != 1 {
		return nil, fmt.Errorf("%d core entries", len(img.Entries))
	}
	ce, ok := img.Entries[0].Message.(*criucore.CoreEntry)
	if !ok || ce.GetThreadCore() == nil {
		return nil, fmt.Errorf("no thread core")
	}
	return ce.GetThreadCore(), nil
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

package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// checkCheckpointRootfs refuses a checkpoint whose rootfs changes (the
// upper dir unpackCheckpoint filled from rootfs-diff.tar) hold what the
// restoring container could not have made itself: a device node without
// CAP_MKNOD, a setuid file of another user without CAP_CHOWN and
// CAP_FOWNER, a setgid file of another group without CAP_CHOWN and
// CAP_FSETID, a file capability (security.capability) without CAP_SETFCAP.
// Nothing runs in the upper dir yet: it is walked by path, no link followed.
func (x *restoration) checkCheckpointRootfs(context.Context) error {
	if err := checkRootfsAgainst(x.t.Dirs().Upper, x.t.Spec().Process); err != nil {
		return fmt.Errorf("%w: checkpoint %s: %s: %v", ErrFailedPrecondition, x.rec.Archive, checkpointRootfs, err)
	}
	return nil
}

func checkRootfsAgainst(upper string, p *specs.Process) error {
	if p == nil {
		return errors.New("spec has no process")
	}
	return filepath.WalkDir(upper, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return fmt.Errorf("stat %s: %w", path, err)
		}
		rel, _ := filepath.Rel(upper, path)
		if err := checkDiffEntry(path, &st, p); err != nil {
			return fmt.Errorf("/%s: %w", rel, err)
		}
		return nil
	})
}

// checkDiffEntry checks one file of the rootfs changes against what the
// spec's process p may do.
func checkDiffEntry(path string, st *unix.Stat_t, p *specs.Process) error {
	typ := st.Mode & unix.S_IFMT
	switch {
	case (typ == unix.S_IFCHR || typ == unix.S_IFBLK) && st.Rdev != 0 && !mayUse(p, "CAP_MKNOD"):
		// 0/0 is an overlay whiteout: any process deletes files.
		return fmt.Errorf("a device node (%d:%d), which the container (no CAP_MKNOD) cannot make", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	case typ == unix.S_IFLNK:
		return nil // no mode, no file capability
	case st.Mode&unix.S_ISUID != 0 && st.Uid != p.User.UID && !mayUseAll(p, "CAP_CHOWN", "CAP_FOWNER"):
		return fmt.Errorf("setuid to uid %d, which the container (uid %d, no CAP_CHOWN and CAP_FOWNER) cannot make", st.Uid, p.User.UID)
	case typ == unix.S_IFREG && st.Mode&unix.S_ISGID != 0 && !inGroup(p, st.Gid) && !mayUseAll(p, "CAP_CHOWN", "CAP_FSETID"):
		// A directory inherits setgid from its parent (an image's), a file does not.
		return fmt.Errorf("setgid to gid %d, which the container (not in it, no CAP_CHOWN and CAP_FSETID) cannot make", st.Gid)
	}
	if sz, err := unix.Lgetxattr(path, "security.capability", nil); err == nil && sz > 0 && !mayUse(p, "CAP_SETFCAP") {
		return errors.New("file capabilities (security.capability), which the container (no CAP_SETFCAP) cannot set")
	}
	return nil
}

// mayUse tells whether any process of the container can hold capability
// name: it is in the bounding set and, for a non-root no_new_privs process
// (which gains nothing at exec), in its ambient set.
func mayUse(p *specs.Process, name string) bool {
	c := p.Capabilities
	if c == nil || !slices.Contains(c.Bounding, name) {
		return false
	}
	return !p.NoNewPrivileges || p.User.UID == 0 || slices.Contains(c.Ambient, name)
}

// mayUseAll: mayUse of every capability named.
func mayUseAll(p *specs.Process, names ...string) bool {
	for _, n := range names {
		if !mayUse(p, n) {
			return false
		}
	}
	return true
}

func inGroup(p *specs.Process, gid uint32) bool {
	return gid == p.User.GID || slices.Contains(p.User.AdditionalGids, gid)
}

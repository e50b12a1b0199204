// Package hostdir creates minicri's directories on the host with modes
// that keep what containers and images hold away from unprivileged host
// users (the class of containerd's CVE-2021-41103): a setuid file or a
// device node written by a container, or brought by an image, must not be
// reachable by path by anyone but root.
package hostdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

const (
	// Private is for directories only root may enter: the root
	// directory, and everything that holds writable layers, unpacked
	// layers or mounts of container files.
	Private os.FileMode = 0o700
	// Traversable is for directories that the container init of a pod with
	// its own user namespace, an unprivileged host user, walks through to
	// reach its rootfs by path: searchable, not listable.
	Traversable os.FileMode = 0o711
	// GroupTraversable is for a directory that only one group, besides
	// root, may search: a container's state directory while the init of a
	// pod with its own user namespace (whose root is that group on the
	// host) walks through it.
	GroupTraversable os.FileMode = 0o710
)

// Ensure creates dir with mode (missing parents searchable, 0711) and sets
// mode on it if it existed with another one, as an older minicri left it.
// dir must be a real directory, not a symbolic link: resolve an operator's
// link once, with Resolve, before.
func Ensure(dir string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dir), Traversable); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if st.Mode().Perm() != mode {
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", dir, err)
		}
	}
	return nil
}

// Resolve returns the real path of a directory the operator configured,
// following the symbolic links in it once, at start (a link is a common way
// to move /var/lib/minicri to another disk). Only the operator's own
// configuration is resolved: everything minicri creates below is checked
// with Lstat and must not be a link. A missing dir is created first, with
// mode, so that a link to a missing target fails clearly.
func Resolve(dir string, mode os.FileMode) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%s is not an absolute path", dir)
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := Ensure(dir, mode); err != nil {
			return "", err
		}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	return real, nil
}

// Tighten makes every directory directly under dir root's with mode (the
// per-pod or per-container directories an older minicri created more open,
// or that a crash left open to a pod's group). A missing dir is fine.
func Tighten(dir string, mode os.FileMode) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if err := Close(filepath.Join(dir, e.Name()), info, mode); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close makes the directory path (described by info, or looked at when nil)
// root's, root:root with mode: the mode first, so that the group it had
// never gets more.
func Close(path string, info os.FileInfo, mode os.FileMode) error {
	if info == nil {
		var err error
		if info, err = os.Lstat(path); err != nil {
			return err
		}
	}
	if info.Mode().Perm() != mode {
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", path, err)
		}
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && (st.Uid != 0 || st.Gid != 0) {
		if err := os.Lchown(path, 0, 0); err != nil {
			return fmt.Errorf("chown %s: %w", path, err)
		}
	}
	return nil
}

// OpenToGroup lets the group gid (and root) search the directory path,
// and no one else: root:gid with mode GroupTraversable. The group is set
// while the directory is still Private, so that no one else ever may.
func OpenToGroup(path string, gid int) error {
	if err := os.Lchown(path, 0, gid); err != nil {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	if err := os.Chmod(path, GroupTraversable); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	return nil
}

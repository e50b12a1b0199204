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
)

// Ensure creates dir with mode (missing parents searchable, 0711) and sets
// mode on it if it existed with another one, as an older minicri left it.
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

// Tighten sets mode on every directory directly under dir (the per-pod or
// per-container directories an older minicri created more open). A missing
// dir is fine.
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
		if err != nil || info.Mode().Perm() == mode {
			continue
		}
		if err := os.Chmod(filepath.Join(dir, e.Name()), mode); err != nil {
			errs = append(errs, fmt.Errorf("chmod %s: %w", e.Name(), err))
		}
	}
	return errors.Join(errs...)
}

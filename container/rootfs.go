package container

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/internal/hostdir"
	"github.com/minicri/minicri/internal/mounts"
)

// mountRootfs mounts an overlay of the image layers (bottom first) with the
// container's own upper and work dirs under dir, at target. With a user
// namespace (usernsPath set, root mapped to hostRoot), each layer is seen
// through an idmapped mount, so image files owned by host root show as the
// namespace's root without being chowned; only the container's own empty
// upper and work dirs are given to its root.
func mountRootfs(layers []string, dir, target, usernsPath string, hostRoot [2]int) error {
	upper, work := filepath.Join(dir, "fs", "upper"), filepath.Join(dir, "fs", "work")
	// The upper dir's mode is the mode of the container's "/".
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{filepath.Join(dir, "fs"), hostdir.Private}, {upper, 0o755}, {work, hostdir.Private}, {target, 0o755}} {
		if err := os.Mkdir(d.path, d.mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create rootfs dirs: %w", err)
		}
	}
	lower := make([]string, 0, len(layers))
	for i := len(layers) - 1; i >= 0; i-- {
		lower = append(lower, layers[i])
	}
	if len(lower) == 0 {
		empty := filepath.Join(dir, "fs", "empty")
		// The only lower dir: it is the container's "/", which a non-root
		// container user must be able to search.
		if err := os.Mkdir(empty, 0o755); err != nil && !errors.Is(err, fs.ErrExist) { //nolint:gosec // see above
			return err
		}
		lower = append(lower, empty)
	}
	if usernsPath != "" {
		mapped, err := idmapLayers(lower, idmapDir(target), usernsPath)
		if err != nil {
			return err
		}
		lower = mapped
		for _, d := range []string{upper, work} {
			if err := os.Chown(d, hostRoot[0], hostRoot[1]); err != nil {
				return fmt.Errorf("give upper dir to the container's root: %w", err)
			}
		}
	}
	if err := mounts.Overlay(target, lower, upper, work, 0); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	return nil
}

// idmapDir holds the idmapped views of the layers of the rootfs at target.
func idmapDir(target string) string { return filepath.Join(filepath.Dir(target), "idmap") }

// idmapLayers attaches an idmapped view of each layer under dir, which only
// root may enter (the overlay, not the container init, reaches the views).
// On error, the views attached so far stay for unmountRootfs (the step's
// undo) to detach.
func idmapLayers(layers []string, dir, usernsPath string) ([]string, error) {
	if err := os.Mkdir(dir, hostdir.Private); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	userns, err := os.Open(usernsPath)
	if err != nil {
		return nil, fmt.Errorf("open user namespace: %w", err)
	}
	defer userns.Close()
	out := make([]string, 0, len(layers))
	for i, l := range layers {
		view := filepath.Join(dir, strconv.Itoa(i))
		// A mount point (in a 0700 directory): the idmapped layer mounted on
		// it hides this mode.
		if err := os.Mkdir(view, 0o755); err != nil && !errors.Is(err, fs.ErrExist) { //nolint:gosec // see above
			return nil, err
		}
		if err := idmapMount(l, view, int(userns.Fd())); err != nil {
			return nil, err
		}
		out = append(out, view)
	}
	return out, nil
}

// unmountRootfs unmounts the rootfs and the idmapped layer views under it;
// what is not mounted is fine.
func unmountRootfs(target string) error {
	if err := mounts.UnmountAll(target); err != nil {
		return err
	}
	views, _ := os.ReadDir(idmapDir(target))
	for _, v := range views {
		if err := mounts.UnmountAll(filepath.Join(idmapDir(target), v.Name())); err != nil {
			return err
		}
	}
	return nil
}

// idmapMount attaches at target an idmapped clone of the mount at src,
// mapped through the user namespace open as userns.
func idmapMount(src, target string, userns int) error {
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("clone mount %s: %w", src, err)
	}
	defer unix.Close(tree)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY, Userns_fd: uint64(userns)} //nolint:gosec // an open fd: non-negative
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("idmap mount %s: %w", src, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach idmapped mount on %s: %w", target, err)
	}
	return nil
}

package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/internal/hostdir"
)

// IDMapLayers attaches an idmapped view of each layer under dir, which only
// root may enter (the overlay, not the container init, reaches the views).
// On error, the views attached so far stay for the caller (its undo) to
// detach.
func IDMapLayers(layers []string, dir, usernsPath string) ([]string, error) {
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

package container

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
		mapped, err := mounts.IDMapLayers(lower, idmapDir(target), usernsPath)
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

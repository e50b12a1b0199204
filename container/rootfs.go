package container

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/internal/mounts"
)

// mountRootfs mounts an overlay of the image layers (bottom first) with the
// container's own upper and work dirs under dir, at target.
func mountRootfs(layers []string, dir, target string) error {
	upper, work := filepath.Join(dir, "fs", "upper"), filepath.Join(dir, "fs", "work")
	for _, d := range []string{upper, work, target} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create rootfs dirs: %w", err)
		}
	}
	lower := make([]string, 0, len(layers))
	for i := len(layers) - 1; i >= 0; i-- {
		lower = append(lower, layers[i])
	}
	if len(lower) == 0 {
		empty := filepath.Join(dir, "fs", "empty")
		if err := os.MkdirAll(empty, 0o755); err != nil {
			return err
		}
		lower = append(lower, empty)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", strings.Join(lower, ":"), upper, work)
	if len(opts) >= unix.Getpagesize() {
		return fmt.Errorf("overlay options for %d layers exceed a page", len(layers))
	}
	if err := unix.Mount("overlay", target, "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount overlay rootfs: %w", err)
	}
	return nil
}

// unmountRootfs unmounts the rootfs; not mounted is fine.
func unmountRootfs(target string) error { return mounts.UnmountAll(target) }

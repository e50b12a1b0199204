package network

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// sharedDirs remembers the pin directories already made shared bind
// mounts by this process, so the mountinfo check runs once per directory.
var sharedDirs = struct {
	sync.Mutex
	done map[string]bool
}{done: map[string]bool{}}

// ensureSharedDir makes sure dir exists and is a shared mount point, as
// iproute2 does for /run/netns. A shared pin directory lets unmounts of pins
// propagate into mount namespaces created later (containers), so a removed
// netns is not kept alive by a stale copy of its pin (EBUSY, leak).
//
// It returns the cleaned, symlink-resolved directory.
func ensureSharedDir(dir string) (string, error) {
	// 0755 as iproute2 creates /run/netns; minicri's own netns dir is
	// created 0711 by the sandbox manager before this runs.
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // see above
		return "", fmt.Errorf("create netns dir %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("resolve netns dir %s: %w", dir, err)
	}
	real = filepath.Clean(real)

	sharedDirs.Lock()
	defer sharedDirs.Unlock()
	if sharedDirs.done[real] {
		return real, nil
	}

	mounted, shared, err := mountState(real)
	if err != nil {
		return "", err
	}
	if !mounted {
		if err := unix.Mount(real, real, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return "", fmt.Errorf("bind mount netns dir %s onto itself: %w", real, err)
		}
		slog.Debug("netns dir bind-mounted onto itself", "dir", real)
	}
	if !shared {
		if err := unix.Mount("", real, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
			if !mounted {
				// Undo our own bind mount; leave nothing behind.
				_ = unix.Unmount(real, unix.MNT_DETACH)
			}
			return "", fmt.Errorf("make netns dir %s a shared mount: %w", real, err)
		}
		slog.Debug("netns dir made shared", "dir", real)
	}
	sharedDirs.done[real] = true
	return real, nil
}

// mountState reports whether dir is a mount point and, if so, whether the
// topmost mount on it has shared propagation.
func mountState(dir string) (mounted, shared bool, err error) {
	infos, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(dir))
	if err != nil {
		return false, false, fmt.Errorf("read mountinfo for %s: %w", dir, err)
	}
	if len(infos) == 0 {
		return false, false, nil
	}
	top := infos[len(infos)-1]
	for _, f := range strings.Fields(top.Optional) {
		if strings.HasPrefix(f, "shared:") {
			return true, true, nil
		}
	}
	return true, false, nil
}

// unmountAll detaches every mount stacked on path. A path that is not a
// mount point (EINVAL) or does not exist (ENOENT) is fine.
func unmountAll(path string) error {
	for range 16 {
		err := unix.Unmount(path, unix.MNT_DETACH)
		switch {
		case err == nil:
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil
		default:
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
	return fmt.Errorf("unmount %s: still mounted after 16 unmounts", path)
}

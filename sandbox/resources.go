package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/internal/mounts"
)

// shmSize is the size of a pod's private /dev/shm, as in containerd.
const shmSize = "65536k"

// mountShm mounts a private tmpfs for the pod's /dev/shm at path.
func mountShm(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return fmt.Errorf("create shm dir: %w", err)
	}
	err := unix.Mount("shm", path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size="+shmSize)
	if err != nil {
		return fmt.Errorf("mount shm at %s: %w", path, err)
	}
	return nil
}

// unmountShm unmounts and removes the pod's /dev/shm; missing is fine.
func unmountShm(path string) error {
	if path == "" {
		return nil
	}
	if err := mounts.UnmountAll(path); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove shm dir: %w", err)
	}
	return nil
}

// removeCgroup removes the pause's cgroup in every hierarchy (or stops its
// systemd scope); a missing one is fine. It fails while processes remain.
func removeCgroup(path string) error { return cgdriver.Remove(path) }

// removeEmptyCgroup removes path in every hierarchy where it is empty.
func removeEmptyCgroup(path string) {
	if path == "" || path == "/" {
		return
	}
	mounts, err := cgroups.GetCgroupMounts(false)
	if err != nil {
		return
	}
	dirs := []string{"/sys/fs/cgroup/unified"}
	for _, mnt := range mounts {
		dirs = append(dirs, mnt.Mountpoint)
	}
	for _, d := range dirs {
		_ = os.Remove(filepath.Join(d, path)) // absent, or not empty there: nothing to do
	}
}

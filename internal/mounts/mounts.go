// Package mounts holds small mount helpers shared by the domain packages.
package mounts

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// UnmountAll lazily detaches every mount stacked on path; a path that is not
// mounted (or does not exist) is fine.
func UnmountAll(path string) error {
	for {
		err := unix.Unmount(path, unix.MNT_DETACH)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
}

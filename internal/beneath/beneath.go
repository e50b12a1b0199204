// Package beneath opens files relative to a directory descriptor without
// ever leaving that directory: the one way minicri looks into directories
// that others write (a container's writable layer, a pod's log directory,
// an image's layers), where any entry may be a symbolic link, or be swapped
// for one at any moment.
package beneath

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// NoLinks confines a lookup to its starting directory and refuses symbolic
// links (and /proc magic links) on the way.
const NoLinks = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Open opens name relative to the directory dirfd, beneath it, following
// no link at all (O_NOFOLLOW and O_CLOEXEC are added to flags).
func Open(dirfd int, name string, flags int, mode uint32) (int, error) {
	return unix.Openat2(dirfd, name, &unix.OpenHow{
		Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: NoLinks, //nolint:gosec // open(2) flags: non-negative constants
	})
}

// OpenInRoot opens name relative to the directory dirfd as if dirfd were
// the root directory: symbolic links are followed, but an absolute one or
// ".." resolves inside dirfd, and the lookup stays on dirfd's mount (for
// paths that name something in an image, where links are the image's own).
func OpenInRoot(dirfd int, name string, flags int) (int, error) {
	return unix.Openat2(dirfd, name, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC), //nolint:gosec // open(2) flags: non-negative constants
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
}

// Reopen opens the file that the descriptor fd (typically O_PATH, which
// opens nothing) refers to again, with flags: the same inode, whatever its
// path now holds. Check the inode's type on fd first: opening a device or
// a FIFO runs its driver.
func Reopen(fd int, flags int) (int, error) {
	nfd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("reopen: %w", err)
	}
	return nfd, nil
}

// MkdirAll opens (creating, with mode) the directory sub relative to root,
// one component at a time: each is made and opened relative to the
// descriptor of its parent, and none may be a symbolic link. It returns an
// O_PATH descriptor, which the caller closes (root stays the caller's).
func MkdirAll(root int, sub string, mode uint32) (int, error) {
	fd, err := unix.Dup(root)
	if err != nil {
		return -1, err
	}
	if sub == "." {
		return fd, nil
	}
	for _, c := range strings.Split(sub, "/") {
		if err := unix.Mkdirat(fd, c, mode); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return -1, err
		}
		next, err := Open(fd, c, unix.O_PATH|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

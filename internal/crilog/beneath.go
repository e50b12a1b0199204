package crilog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/internal/beneath"
)

// ErrNotBeneath means a log path leaves its log directory, or reaches its
// file through a symbolic link, or names something else than a regular file.
var ErrNotBeneath = errors.New("container log must be a regular file beneath the log directory, reached without symbolic links")

// openBeneath opens (creating) the log file name below the pod log directory
// dir for appending. dir comes from the kubelet and is created if missing;
// name comes from the request and the directories under dir may be written
// by others, so name's missing directories are created and every component
// is opened relative to its parent with openat2, beneath dir and without
// following symbolic links: a log path or a planted link cannot make root
// write outside dir.
func openBeneath(dir, name string) (*os.File, error) {
	if !filepath.IsAbs(dir) || !filepath.IsLocal(name) || filepath.Clean(name) == "." {
		return nil, fmt.Errorf("open container log %q in %q: %w", name, dir, ErrNotBeneath)
	}
	// The pod log directory, as the kubelet creates it (0755): node log
	// agents read container logs there.
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // see above
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open log dir: %w", &os.PathError{Op: "open", Path: dir, Err: err})
	}
	defer unix.Close(root)
	name = filepath.Clean(name)
	parent, err := beneath.MkdirAll(root, filepath.Dir(name), 0o755)
	if err != nil {
		return nil, fmt.Errorf("create log dir %s in %s: %w", filepath.Dir(name), dir, beneathErr(err))
	}
	defer unix.Close(parent)
	fd, err := openRegular(parent, filepath.Base(name))
	if err != nil {
		return nil, fmt.Errorf("open container log %s in %s: %w", name, dir, beneathErr(err))
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, name)), nil
}

// openRegular opens base in the directory parent for appending: a new file
// is created exclusively; an existing one is looked at first (O_PATH opens
// nothing) and opened only if it is a regular file, so a device node or a
// FIFO planted at the name never has its driver opened by root.
func openRegular(parent int, base string) (int, error) {
	const flags = unix.O_WRONLY | unix.O_APPEND
	fd, err := beneath.Open(parent, base, flags|unix.O_CREAT|unix.O_EXCL, 0o640)
	if !errors.Is(err, unix.EEXIST) {
		return fd, err
	}
	pfd, err := beneath.Open(parent, base, unix.O_PATH, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, ErrNotBeneath
	}
	return beneath.Reopen(pfd, flags)
}

// beneathErr names the errors openat2 gives for a path that escapes or
// goes through a link.
func beneathErr(err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("%w (%v)", ErrNotBeneath, err)
	}
	return err
}

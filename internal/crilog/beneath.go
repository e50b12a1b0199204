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
	// O_NONBLOCK: a FIFO planted at the name must not block the open.
	fd, err := beneath.Open(parent, filepath.Base(name), unix.O_CREAT|unix.O_WRONLY|unix.O_APPEND|unix.O_NONBLOCK, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open container log %s in %s: %w", name, dir, beneathErr(err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("open container log %s in %s: %w", name, dir, ErrNotBeneath)
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, name)), nil
}

// beneathErr names the errors openat2 gives for a path that escapes or
// goes through a link.
func beneathErr(err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("%w (%v)", ErrNotBeneath, err)
	}
	return err
}

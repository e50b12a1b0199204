package network

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// NetNS is a network namespace pinned by a bind mount on a file.
// A NetNS is only a path; all methods are safe for concurrent use.
type NetNS struct {
	path string
}

// NewNetNS creates a new network namespace and pins it at dir/name.
//
// dir is created if needed and made a shared bind mount of itself (once per
// process). The namespace is made by unshare(CLONE_NEWNET) on a dedicated,
// locked OS thread that is never unlocked, so that thread dies with its
// goroutine and no other goroutine ever runs in the new namespace. If the pin
// already exists the error wraps os.ErrExist. On any failure nothing is left.
func NewNetNS(dir, name string) (*NetNS, error) {
	path, err := newPinFile(dir, name)
	if err != nil {
		return nil, err
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the runtime terminates this thread when the
		// goroutine returns. The main thread is the exception (it is only
		// parked, "wedged"), so the thread is also switched back to its
		// original netns; otherwise a wedged main thread would keep the pod's
		// netns alive and make /proc/self/ns/net point at it.
		runtime.LockOSThread()
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		orig, err := os.Open(self)
		if err != nil {
			errc <- fmt.Errorf("open current netns: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare netns: %w", err)
			return
		}
		mountErr := bindPin(self, path)
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			mountErr = errors.Join(mountErr, fmt.Errorf("restore thread netns: %w", err))
		}
		errc <- mountErr
	}()
	if err := <-errc; err != nil {
		_ = unmountAll(path)
		_ = os.Remove(path)
		return nil, fmt.Errorf("create netns %s: %w", path, err)
	}
	return &NetNS{path: path}, nil
}

// PinNetNS pins an existing network namespace, named by src (for instance
// /proc/<pid>/ns/net of a process that created it inside a pod's user
// namespace), at dir/name. On failure nothing is left.
func PinNetNS(dir, name, src string) (*NetNS, error) {
	path, err := newPinFile(dir, name)
	if err != nil {
		return nil, err
	}
	if err := bindPin(src, path); err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	return &NetNS{path: path}, nil
}

// newPinFile makes the empty file dir/name that a netns is bind-mounted on;
// dir is created if needed and made a shared bind mount of itself (once per
// process). If the pin already exists the error wraps os.ErrExist.
func newPinFile(dir, name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return "", fmt.Errorf("netns name %q: %w", name, ErrInvalidConfig)
	}
	if _, err := ensureSharedDir(dir); err != nil {
		return "", err
	}
	// Keep the caller's spelling of the path: callers recompute it.
	path := filepath.Join(dir, name)
	// A mount point: the netns bind-mounted on it hides this mode.
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444) //nolint:gosec // see above
	if err != nil {
		return "", fmt.Errorf("create netns pin %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("close netns pin %s: %w", path, err)
	}
	return path, nil
}

func bindPin(src, path string) error {
	if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s on %s: %w", src, path, err)
	}
	return nil
}

// LoadNetNS returns the NetNS pinned at path; it does not check the pin.
func LoadNetNS(path string) *NetNS {
	return &NetNS{path: path}
}

// Path returns the pin's path.
func (n *NetNS) Path() string {
	return n.path
}

// Remove unmounts the pin (lazily, MNT_DETACH) and deletes the file. The
// namespace itself goes away once nothing else holds it. Remove is
// idempotent: a missing pin is not an error.
func (n *NetNS) Remove() error {
	if n.path == "" {
		return nil
	}
	if err := unmountAll(n.path); err != nil {
		return fmt.Errorf("remove netns: %w", err)
	}
	if err := os.Remove(n.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove netns pin %s: %w", n.path, err)
	}
	return nil
}

// Exists reports whether the pin exists and still holds a network
// namespace (is a mounted nsfs file).
func (n *NetNS) Exists() bool {
	return isNetNSPath(n.path)
}

// isNetNSPath reports whether path is an nsfs file, i.e. a pinned or proc
// namespace handle, rather than a plain (unmounted) file.
func isNetNSPath(path string) bool {
	if path == "" {
		return false
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}

// Do runs fn on an OS thread switched into the namespace and waits for it.
// fn runs on its own goroutine: goroutines it starts run in the caller's
// namespace, not this one. Sockets it opens stay in the namespace and can be
// used from anywhere afterwards. If the thread cannot be switched back, it
// is never unlocked, so the Go runtime discards it.
func (n *NetNS) Do(fn func() error) error {
	target, err := os.Open(n.path)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", n.path, err)
	}
	defer target.Close()
	if !isNetNSPath(n.path) {
		return fmt.Errorf("netns %s: not a network namespace", n.path)
	}

	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open current netns: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter netns %s: %w", n.path, err)
			return
		}
		fnErr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it dies with this goroutine.
			errc <- errors.Join(fnErr, fmt.Errorf("restore netns after %s: %w", n.path, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- fnErr
	}()
	return <-errc
}

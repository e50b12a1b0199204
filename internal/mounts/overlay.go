package mounts

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Overlay mounts an overlay filesystem at target. lower lists the lower
// layers top first; upper and work are both "" for an overlay of lower
// layers only (which is read-only).
//
// mount(2) takes at most a page of options, which absolute layer paths
// exceed at about 40 layers. Then each lower layer is opened (O_PATH) and
// named by its descriptor number, relative to /proc/self/fd, from a thread
// of its own (see mountFromFdDir): a few bytes per layer, so overlayfs's own
// limit of 500 layers fits. This works on every kernel with overlayfs
// (unlike fsconfig's "lowerdir+", new in 6.8), and costs nothing for the
// usual image, whose options fit.
func Overlay(target string, lower []string, upper, work string, flags uintptr) error {
	var tail string
	if upper != "" || work != "" {
		tail = ",upperdir=" + upper + ",workdir=" + work
	}
	opts := "lowerdir=" + strings.Join(lower, ":") + tail
	if len(opts) < unix.Getpagesize() {
		if err := unix.Mount("overlay", target, "overlay", flags, opts); err != nil {
			return fmt.Errorf("mount overlay at %s: %w", target, err)
		}
		return nil
	}
	for _, p := range []string{target, upper, work} {
		if p != "" && !filepath.IsAbs(p) {
			return fmt.Errorf("overlay at %s: %q is not an absolute path", target, p)
		}
	}
	fds := make([]string, 0, len(lower))
	defer func() {
		for _, fd := range fds {
			n, _ := strconv.Atoi(fd)
			unix.Close(n)
		}
	}()
	for _, l := range lower {
		fd, err := unix.Open(l, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open overlay layer %s: %w", l, err)
		}
		fds = append(fds, strconv.Itoa(fd))
	}
	opts = "lowerdir=" + strings.Join(fds, ":") + tail
	if len(opts) >= unix.Getpagesize() {
		return fmt.Errorf("overlay at %s: options for %d layers exceed a page even by descriptor", target, len(lower))
	}
	if err := mountFromFdDir(target, flags, opts); err != nil {
		return fmt.Errorf("mount overlay of %d layers at %s: %w", len(lower), target, err)
	}
	return nil
}

// mountFromFdDir mounts the overlay from a new OS thread whose working
// directory is /proc/self/fd, so that relative lower dirs name this
// process's descriptors. The thread first stops sharing its filesystem
// context (unshare(CLONE_FS)), so the chdir touches no other thread; it is
// never unlocked, so it exits with the goroutine instead of going back to
// the Go scheduler with another working directory.
func mountFromFdDir(target string, flags uintptr, opts string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			errc <- fmt.Errorf("unshare(CLONE_FS): %w", err)
			return
		}
		if err := unix.Chdir("/proc/self/fd"); err != nil {
			errc <- fmt.Errorf("chdir /proc/self/fd: %w", err)
			return
		}
		errc <- unix.Mount("overlay", target, "overlay", flags, opts)
	}()
	return <-errc
}

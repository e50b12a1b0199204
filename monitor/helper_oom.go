package monitor

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/opencontainers/cgroups/fscommon"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/ocirt"
)

// watchOOM hands the monitor what it needs to follow a systemd cgroup's OOM
// kills: the scope's cgroup, and the kill count in it, go as soon as its
// last process exits, often before the exit is reaped and the count read.
// On cgroup v2 the monitor does what cgdriver.OOMWatch does: an inotify on
// memory.events and cgroup.events (oomino), both read through the cgroup's
// directory (oomdir) on every change and once more when it empties, and the
// parent's count (oompar, oombase) as a witness. On v1, an eventfd
// registered on memory.oom_control (oomevt) and the memory cgroup (oomdir).
func watchOOM(c ocirt.Container, a *answer, log *slog.Logger) {
	paths, err := c.CgroupPaths()
	if err != nil {
		log.Warn("watch for OOM kills", "err", err)
		return
	}
	if dir := paths[""]; cgdriver.Unified() && dir != "" {
		err = watchOOMv2(dir, a)
	} else {
		err = watchOOMv1(paths["memory"], a)
	}
	if err != nil {
		log.Warn("watch for OOM kills", "err", err)
	}
}

func watchOOMv2(dir string, a *answer) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	ino := os.NewFile(uintptr(fd), "inotify")
	for _, name := range []string{"memory.events", "cgroup.events"} {
		if _, err := unix.InotifyAddWatch(fd, filepath.Join(dir, name), unix.IN_MODIFY); err != nil {
			ino.Close()
			return fmt.Errorf("watch %s/%s: %w", dir, name, err)
		}
	}
	d, err := os.Open(dir)
	if err != nil {
		ino.Close()
		return err
	}
	a.fd("oomino", ino)
	a.fd("oomdir", d)
	parent := filepath.Dir(dir)
	if n, err := fscommon.GetValueByKey(parent, "memory.events", "oom_kill"); err == nil {
		if p, err := os.Open(parent); err == nil {
			a.fd("oompar", p)
			a.set("oombase", strconv.FormatUint(n, 10))
		}
	}
	return nil
}

func watchOOMv1(dir string, a *answer) error {
	if dir == "" {
		return fmt.Errorf("no memory cgroup")
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	ev := os.NewFile(uintptr(efd), "eventfd")
	ctl, err := os.Open(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		ev.Close()
		return err
	}
	defer ctl.Close() // the registration holds it
	reg := fmt.Sprintf("%d %d", efd, ctl.Fd())
	if err := os.WriteFile(filepath.Join(dir, "cgroup.event_control"), []byte(reg), 0o200); err != nil {
		ev.Close()
		return fmt.Errorf("register OOM eventfd: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		ev.Close()
		return err
	}
	a.fd("oomevt", ev)
	a.fd("oomdir", d)
	return nil
}

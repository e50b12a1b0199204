package cgdriver

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/opencontainers/cgroups/fscommon"
	"golang.org/x/sys/unix"
)

// OOMWatch follows the OOM kills of one cgroup v2 cgroup whose directory may
// go as soon as its last process exits (a systemd scope), before anyone reads
// its kill count. libcontainer's NotifyOOM misses kills there: the kernel
// delays a file's change notification by up to 10 ms after the previous one
// (memory.events also changes on every "max" event as the limit is hit),
// and its watch ends at cgroup.events' "populated 0", which arrives first,
// without reading memory.events again. This watch reads memory.events on
// every change of either file, once more when the cgroup empties, and keeps
// the parent's hierarchical count as a witness for when all of that lost.
type OOMWatch struct {
	dir        string
	parentBase uint64 // the parent's oom_kill when the watch began
	parentOK   bool
	seen       atomic.Bool
	done       chan struct{}
	f          *os.File
}

// WatchOOM starts following dir's memory.events and cgroup.events.
func WatchOOM(dir string) (*OOMWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	for _, name := range []string{"memory.events", "cgroup.events"} {
		if _, err := unix.InotifyAddWatch(fd, filepath.Join(dir, name), unix.IN_MODIFY); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("watch %s/%s: %w", dir, name, err)
		}
	}
	w := &OOMWatch{dir: dir, done: make(chan struct{}), f: f}
	w.parentBase, err = oomKillCount(filepath.Dir(dir))
	w.parentOK = err == nil
	go w.run()
	return w, nil
}

func (w *OOMWatch) run() {
	defer close(w.done)
	defer w.f.Close()
	buf := make([]byte, 4096)
	for w.check() {
		if _, err := w.f.Read(buf); err != nil {
			w.check()
			return
		}
	}
}

// check reads the kill count and reports whether the cgroup still has
// processes (false also when it is gone). "populated" is read first: the
// kernel counts a kill before the killed task leaves the cgroup, so a count
// read after "populated 0" holds every kill; read the other way round, a
// cgroup that emptied between the two reads ended the watch on a count
// from before its kill (TestOOMWatchReadsTheCountWhenTheCgroupEmpties, 1 run
// in about 50).
func (w *OOMWatch) check() bool {
	populated, err := fscommon.GetValueByKey(w.dir, "cgroup.events", "populated")
	if n, err := oomKillCount(w.dir); err == nil && n > 0 {
		w.seen.Store(true)
	}
	return err == nil && populated != 0
}

// Killed reports whether the kernel OOM-killed in the cgroup, once the
// cgroup has emptied (waiting up to wait for the watch to end). When the
// watch saw nothing and the exit was a SIGKILL, a rise of the parent's
// hierarchical count since the watch began counts as this cgroup's kill.
func (w *OOMWatch) Killed(wait time.Duration, sigkilled bool) bool {
	select {
	case <-w.done:
	case <-time.After(wait):
	}
	if w.seen.Load() {
		return true
	}
	if !sigkilled || !w.parentOK {
		return false
	}
	n, err := oomKillCount(filepath.Dir(w.dir))
	return err == nil && n > w.parentBase
}

// Close ends the watch.
func (w *OOMWatch) Close() {
	_ = w.f.Close()
	<-w.done
}

func oomKillCount(dir string) (uint64, error) {
	return fscommon.GetValueByKey(dir, "memory.events", "oom_kill")
}

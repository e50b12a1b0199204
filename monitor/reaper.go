package monitor

import (
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// reaper collects orphans. The monitor is a child subreaper, so it inherits
// the orphaned descendants of its containers (in pods on the host's PID
// namespace, where no pause or container init reaps them), and nobody else
// would wait for them. Its own children (the pause, container inits, and
// libcontainer's helpers while a container starts) are left to whoever
// waits for them: starts hold the reaper's lock, and known PIDs are skipped.
type reaper struct {
	mu    sync.Mutex
	known map[int]bool
	log   *slog.Logger
}

func newReaper(log *slog.Logger) *reaper { return &reaper{known: map[int]bool{}, log: log} }

// starting holds the reaper off while children are being started, and
// returns the function that lets it go on.
func (r *reaper) starting() func() {
	r.mu.Lock()
	return r.mu.Unlock
}

// track marks pid as a child someone waits for; untrack forgets it. Both
// must be called with the lock from starting held, or on their own.
func (r *reaper) trackLocked(pid int) { r.known[pid] = true }

func (r *reaper) untrack(pid int) {
	r.mu.Lock()
	delete(r.known, pid)
	r.mu.Unlock()
}

// run reaps orphans whenever a child changes state.
func (r *reaper) run() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	for range ch {
		r.reapOrphans()
	}
}

func (r *reaper) reapOrphans() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, pid := range children() {
		if r.known[pid] || !zombie(pid) {
			continue
		}
		var ws unix.WaitStatus
		if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && got == pid {
			r.log.Debug("reaped orphan", "pid", pid, "exit_code", ws.ExitStatus())
		}
	}
}

// children lists the monitor's child processes (of all its threads).
func children() []int {
	files, _ := filepath.Glob("/proc/self/task/*/children")
	var out []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(field); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

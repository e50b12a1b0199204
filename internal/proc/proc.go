// Package proc identifies processes robustly across PID reuse: a process is
// named by its PID plus its start time, and handled through a pidfd.
package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrGone means the process no longer exists (or its PID was reused).
var ErrGone = errors.New("process is gone")

// Ref names one process instance.
type Ref struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"` // field 22 of /proc/PID/stat, in clock ticks since boot
}

// StartTime reads the start time of pid.
func StartTime(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, ErrGone
		}
		return 0, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	// The command name is in parentheses and may hold spaces; fields follow the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse stat of %d", pid)
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); start time is field 22.
	if len(fields) < 20 {
		return 0, fmt.Errorf("parse stat of %d: %d fields", pid, len(fields))
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// RefOf returns the Ref of a running process.
func RefOf(pid int) (Ref, error) {
	st, err := StartTime(pid)
	if err != nil {
		return Ref{}, err
	}
	return Ref{PID: pid, StartTime: st}, nil
}

// Handle is an open pidfd for a verified process.
type Handle struct {
	ref Ref
	fd  int
}

// Open opens a pidfd for ref and checks that the PID still names the same
// process. It returns ErrGone when it does not.
func Open(ref Ref) (*Handle, error) {
	if ref.PID <= 0 {
		return nil, ErrGone
	}
	fd, err := unix.PidfdOpen(ref.PID, 0)
	if err != nil {
		// EINVAL: the PID now names a thread of another process (flags are 0),
		// so the recorded process is gone too.
		if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EINVAL) {
			return nil, ErrGone
		}
		return nil, fmt.Errorf("pidfd_open %d: %w", ref.PID, err)
	}
	// The pidfd pins the process; checking the start time after opening it
	// proves the fd refers to the recorded instance.
	st, err := StartTime(ref.PID)
	if err != nil || st != ref.StartTime {
		unix.Close(fd)
		return nil, ErrGone
	}
	return &Handle{ref: ref, fd: fd}, nil
}

// Ref returns the process this handle names.
func (h *Handle) Ref() Ref { return h.ref }

// Alive reports whether the process has not exited yet (a zombie counts as
// exited).
func (h *Handle) Alive() bool {
	fds := []unix.PollFd{{Fd: int32(h.fd), Events: unix.POLLIN}} //nolint:gosec // an fd fits in int32 (the kernel's int)
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 0
}

// Signal sends sig to the process; a process that is gone is not an error.
func (h *Handle) Signal(sig unix.Signal) error {
	err := unix.PidfdSendSignal(h.fd, sig, nil, 0)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal %d: %w", h.ref.PID, err)
	}
	return nil
}

// WaitExit waits until the process has exited or the timeout passes; it
// reports whether it exited. It does not reap: the parent does that.
func (h *Handle) WaitExit(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left < 0 {
			left = 0
		}
		fds := []unix.PollFd{{Fd: int32(h.fd), Events: unix.POLLIN}} //nolint:gosec // an fd fits in int32 (the kernel's int)
		n, err := unix.Poll(fds, int(left.Milliseconds()))
		if err == nil && n > 0 {
			return true
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || time.Now().After(deadline) {
			return !h.Alive()
		}
	}
}

// Kill sends SIGKILL and waits up to timeout for the exit.
func (h *Handle) Kill(timeout time.Duration) error {
	if err := h.Signal(unix.SIGKILL); err != nil {
		return err
	}
	if !h.WaitExit(timeout) {
		return fmt.Errorf("process %d did not exit within %s of SIGKILL", h.ref.PID, timeout)
	}
	return nil
}

// Close releases the pidfd.
func (h *Handle) Close() error { return unix.Close(h.fd) }

// KillRef kills the recorded process if it still exists.
func KillRef(ref Ref, timeout time.Duration) error {
	h, err := Open(ref)
	if errors.Is(err, ErrGone) {
		return nil
	}
	if err != nil {
		return err
	}
	defer h.Close()
	return h.Kill(timeout)
}

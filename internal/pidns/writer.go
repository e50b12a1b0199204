package pidns

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The writer's exit codes, besides 0 and a write's errno.
const (
	exitRead  = 200 // ns_last_pid could not be read
	exitParse = 201 // ns_last_pid is not a number
	exitSetup = 202 // parent death signal or closing descriptors failed
)

// writerArgs is all the writer uses, prepared before the fork.
type writerArgs struct {
	last    uintptr  // ns_last_pid's descriptor
	top     uint64   // the pid to raise it to
	text    [20]byte // top in decimal
	textLen uintptr
	buf     [24]byte // what the writer reads
}

// runWriter forks the writer from this locked-in thread and waits for it,
// killing it after timeout: a process of the pod may have stopped it.
func runWriter(last int, top uint32, timeout time.Duration) error {
	w := &writerArgs{last: uintptr(last), top: uint64(top)}
	w.textLen = uintptr(copy(w.text[:], strconv.FormatUint(uint64(top), 10)))
	// Blocked in the copy too: no Go signal handler may run there.
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^all.Val[i]
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &all, &old); err != nil {
		return fmt.Errorf("block signals: %w", err)
	}
	pid, errno := forkWriter(w)
	var errs []error
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil); err != nil {
		errs = append(errs, fmt.Errorf("unblock signals: %w", err))
	}
	if errno != 0 {
		return errors.Join(append(errs, fmt.Errorf("fork the writer: %w", errno))...)
	}
	return errors.Join(append(errs, waitWriter(int(pid), timeout))...) //nolint:gosec // a pid
}

// forkWriter forks a copy of this thread, the writer, which raises
// ns_last_pid to top unless it is there already and exits; the caller gets
// the writer's pid. The copy is a forked Go process in which the runtime
// must not run: no allocation, no stack growth, nothing but raw system
// calls (as in syscall.forkAndExecInChild), every signal blocked. It
// closes every descriptor but ns_last_pid first, and dies with its parent.
//
//go:norace
//go:nocheckptr
//go:nosplit
func forkWriter(w *writerArgs) (uintptr, unix.Errno) {
	pid, _, e := unix.RawSyscall6(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 || pid != 0 {
		return pid, e
	}
	if _, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0); e != 0 {
		writerExit(exitSetup)
	}
	if w.last > 0 {
		if _, _, e := unix.RawSyscall(unix.SYS_CLOSE_RANGE, 0, w.last-1, 0); e != 0 {
			writerExit(exitSetup)
		}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_CLOSE_RANGE, w.last+1, ^uintptr(0), 0); e != 0 {
		writerExit(exitSetup)
	}
	// The buffers are w's arrays, which the copy has as the parent had them.
	n, _, e := unix.RawSyscall6(unix.SYS_PREAD64, w.last, uintptr(unsafe.Pointer(&w.buf[0])), uintptr(len(w.buf)), 0, 0, 0) //nolint:gosec // see above
	if e != 0 {
		writerExit(exitRead)
	}
	var cur uint64
	for i := uintptr(0); i < n && i < uintptr(len(w.buf)); i++ {
		c := w.buf[i]
		if c == '\n' {
			break
		}
		if c < '0' || c > '9' {
			writerExit(exitParse)
		}
		cur = cur*10 + uint64(c-'0')
	}
	if cur < w.top {
		if _, _, e := unix.RawSyscall6(unix.SYS_PWRITE64, w.last, uintptr(unsafe.Pointer(&w.text[0])), w.textLen, 0, 0, 0); e != 0 { //nolint:gosec // see above
			writerExit(uintptr(e))
		}
	}
	writerExit(0)
	return 0, 0
}

//go:norace
//go:nosplit
func writerExit(code uintptr) {
	for {
		_, _, _ = unix.RawSyscall(unix.SYS_EXIT_GROUP, code, 0, 0)
	}
}

// waitWriter reaps the writer, which it kills after timeout.
func waitWriter(pid int, timeout time.Duration) error {
	type reaped struct {
		ws  unix.WaitStatus
		err error
	}
	done := make(chan reaped, 1)
	go func() {
		var r reaped
		for {
			if _, r.err = unix.Wait4(pid, &r.ws, 0, nil); !errors.Is(r.err, unix.EINTR) {
				break
			}
		}
		done <- r
	}()
	var r reaped
	select {
	case r = <-done:
	case <-time.After(timeout):
		_ = unix.Kill(pid, unix.SIGKILL)
		<-done
		return fmt.Errorf("the writer in the pod's PID namespace did not finish within %s (a process of the pod stopped it?)", timeout)
	}
	if r.err != nil {
		return fmt.Errorf("wait for the writer: %w", r.err)
	}
	ws := r.ws
	switch code := ws.ExitStatus(); {
	case ws.Signaled():
		return fmt.Errorf("the writer in the pod's PID namespace was killed by %v", ws.Signal())
	case code == 0:
		return nil
	case code == exitRead:
		return fmt.Errorf("read %s in the pod's PID namespace", lastPidFile)
	case code == exitParse:
		return fmt.Errorf("%s in the pod's PID namespace is not a number", lastPidFile)
	case code == exitSetup:
		return errors.New("the writer could not set its parent death signal or close its descriptors (Linux >= 5.9)")
	default:
		return fmt.Errorf("write %s in the pod's PID namespace: %w", lastPidFile, unix.Errno(code)) //nolint:gosec // an errno
	}
}

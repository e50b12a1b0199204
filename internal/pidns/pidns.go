// Package pidns moves a PID namespace's pid allocation cursor
// (/proc/sys/kernel/ns_last_pid) above the pids a restore needs.
//
// CRIU gives every restored task its checkpointed pid (clone3's set_tid),
// which does not move the namespace's cursor: in a pod whose containers
// share the pause's PID namespace, a container restored first and running
// forks its next processes at the cursor and can take a pid the next
// container's restore needs ("Can't fork for N: File exists"). Moving the
// cursor above them first makes new processes take higher pids.
package pidns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Arg is the argument with which ReserveUpTo re-executes the running
// binary; the binary's init hands it to Main.
const Arg = "reserve-pids"

const lastPidFile = "/proc/sys/kernel/ns_last_pid"

// ReserveUpTo moves the allocation cursor of the PID namespace at nsPath
// (a /proc/PID/ns/pid) to at least top, so that the namespace's next
// processes get pids above top. ns_last_pid is that of the writer's own
// PID namespace: a child of a thread that joined the namespace (setns) is
// made to write it. The cursor never moves back.
func ReserveUpTo(nsPath string, top uint32) error {
	ns, err := os.Open(nsPath)
	if err != nil {
		return fmt.Errorf("open pid namespace: %w", err)
	}
	defer func() { _ = ns.Close() }()
	done := make(chan error, 1)
	go func() {
		// The thread is left locked: it ends with the goroutine, so its
		// pid_for_children never serves another goroutine. Go starts new
		// threads from a template thread, not from this one.
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWPID); err != nil {
			done <- fmt.Errorf("join pid namespace: %w", err)
			return
		}
		out, err := exec.Command("/proc/self/exe", Arg, strconv.FormatUint(uint64(top), 10)).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("set ns_last_pid to %d: %w: %s", top, err, strings.TrimSpace(string(out)))
		}
		done <- err
	}()
	return <-done
}

// Main is the re-executed binary's `reserve-pids TOP`, run in the target
// namespace: it raises ns_last_pid to TOP.
func Main(args []string) int {
	if err := raise(args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func raise(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: reserve-pids TOP")
	}
	top, err := strconv.ParseUint(args[0], 10, 31)
	if err != nil {
		return fmt.Errorf("bad pid %q: %w", args[0], err)
	}
	data, err := os.ReadFile(lastPidFile)
	if err != nil {
		return err
	}
	cur, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 31)
	if err != nil {
		return fmt.Errorf("%s: %w", lastPidFile, err)
	}
	if cur >= top {
		return nil
	}
	return os.WriteFile(lastPidFile, []byte(strconv.FormatUint(top, 10)), 0)
}

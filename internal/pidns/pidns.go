// Package pidns moves a PID namespace's pid allocation cursor
// (/proc/sys/kernel/ns_last_pid) above the pids a restore needs.
//
// CRIU gives every restored task its checkpointed pid (clone3's set_tid),
// which does not move the namespace's cursor: in a pod whose containers
// share the pause's PID namespace, a container restored first and running
// forks its next processes at the cursor and can take a pid the next
// container's restore needs ("Can't fork for N: File exists"). Moving the
// cursor above them first makes new processes take higher pids.
//
// ns_last_pid is that of the writer's own PID namespace, so the writer must
// be a process of the pod's namespace, where the pod's containers see it
// (and, as root, may signal it; with CAP_SYS_PTRACE, trace it and open its
// /proc/<pid>/root). It is locked in before it exists: the daemon runs this
// binary (`reserve-pids TOP`, outside the pod), which shuts one thread of
// its own in (lockin.go: an empty root, empty namespaces, nobody with
// CAP_CHECKPOINT_RESTORE alone) and forks the writer from that thread into
// the pod's namespace (writer.go).
package pidns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Arg is the argument with which ReserveUpTo re-executes the running
// binary; the binary's init hands it to Main.
const Arg = "reserve-pids"

const lastPidFile = "/proc/sys/kernel/ns_last_pid"

// nsFD is the PID namespace's descriptor in the re-executed binary.
const nsFD = 3

// Timeout bounds a reservation: the writer is a few system calls, but a
// process of the pod can stop it (SIGSTOP) for ever.
const Timeout = 10 * time.Second

// maxOutput is what is kept of the re-executed binary's output.
const maxOutput = 4 << 10

// ReserveUpTo moves the allocation cursor of the PID namespace ns (an open
// /proc/PID/ns/pid) to at least top, so that the namespace's next
// processes get pids above top. The cursor never moves back. It gives up
// after Timeout or when ctx ends.
func ReserveUpTo(ctx context.Context, ns *os.File, top uint32) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	out := &cappedBuffer{max: maxOutput}
	cmd := exec.CommandContext(ctx, "/proc/self/exe", Arg, strconv.FormatUint(uint64(top), 10))
	cmd.ExtraFiles = []*os.File{ns} // nsFD
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("set ns_last_pid to %d: gave up: %w", top, ctx.Err())
	}
	return fmt.Errorf("set ns_last_pid to %d: %w: %s", top, err, strings.TrimSpace(out.String()))
}

// Main is the re-executed binary's `reserve-pids TOP`, with the PID
// namespace on fd 3: it has the locked-in writer raise ns_last_pid to TOP.
func Main(args []string) int {
	if err := reserve(args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func reserve(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: reserve-pids TOP (the PID namespace on fd 3)")
	}
	top, err := strconv.ParseUint(args[0], 10, 31)
	if err != nil || top == 0 {
		return fmt.Errorf("bad pid %q", args[0])
	}
	// Opened before the lock-in hides /proc; what it reads and writes is
	// the writer's namespace's cursor, whoever opened it.
	last, err := unix.Open(lastPidFile, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", lastPidFile, err)
	}
	// This thread is shut in and forks the writer; it is never unlocked
	// (the process exits after), so nothing else runs on it.
	runtime.LockOSThread()
	if err := lockIn(nsFD); err != nil {
		return err
	}
	return runWriter(last, uint32(top), Timeout/2)
}

// cappedBuffer keeps the first max bytes written to it and drops the rest,
// without failing the writer.
type cappedBuffer struct {
	max int
	buf bytes.Buffer
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *cappedBuffer) String() string { return b.buf.String() }

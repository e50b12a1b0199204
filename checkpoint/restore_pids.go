package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/checkpoint-restore/go-criu/v8/crit"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/pstree"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/internal/pidns"
)

// reservePids keeps the pids the checkpoint's tasks need free in the PID
// namespace the container joins (the pod's, shared): the namespace's next
// processes are given higher pids (internal/pidns). Done at create, so a
// RestorePod reserves every container's pids before the first is restored
// and starts forking. A container with a PID namespace of its own, or the
// host's, needs nothing.
func (x *restoration) reservePids(ctx context.Context) error {
	path := joinedPidNS(x.t.Spec())
	if path == "" {
		return nil
	}
	// Opened once: what is checked is what is joined, whatever the pid in
	// the path is by then.
	ns, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("the PID namespace the container joins: %w", err)
	}
	defer func() { _ = ns.Close() }()
	host, err := sameNamespace(ns, "/proc/self/ns/pid")
	switch {
	case err != nil:
		return fmt.Errorf("the PID namespace the container joins: %w", err)
	case host:
		// A hostPID pod's pause is in the daemon's (the host's) namespace:
		// the archive's pids would move the host's cursor, for good.
		return fmt.Errorf("%w: the container joins the host's PID namespace (its pod's pause is in it); a restore reserves pids only in a pod's own",
			ErrFailedPrecondition)
	}
	top, err := maxCheckpointPid(filepath.Join(x.imagesDir(), "pstree.img"))
	if err != nil {
		return fmt.Errorf("%w: checkpoint image pstree.img: %v", ErrInvalid, err)
	}
	if limit, err := pidMax(); err == nil && top >= limit {
		return fmt.Errorf("%w: checkpoint holds pid %d; this node's pid_max is %d", ErrInvalid, top, limit)
	}
	if err := pidns.ReserveUpTo(ctx, ns, top); err != nil {
		return fmt.Errorf("reserve the checkpoint's pids up to %d: %w", top, err)
	}
	return nil
}

// sameNamespace tells whether the open namespace file a and the one at
// path b are one namespace.
func sameNamespace(a *os.File, b string) (bool, error) {
	var sa, sb unix.Stat_t
	if err := unix.Fstat(int(a.Fd()), &sa); err != nil {
		return false, err
	}
	if err := unix.Stat(b, &sb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}

// pidMax is the node's kernel.pid_max: no pid reaches it.
func pidMax() (uint32, error) {
	data, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 32)
	return uint32(n), err
}

// joinedPidNS is the path of the existing PID namespace spec joins, if any.
func joinedPidNS(spec *specs.Spec) string {
	if spec.Linux == nil {
		return ""
	}
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type == specs.PIDNamespace {
			return ns.Path
		}
	}
	return ""
}

// maxCheckpointPid is the highest pid pstree.img gives a task, a thread,
// a process group or a session (CRIU recreates all of them).
func maxCheckpointPid(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	img, err := crit.New(f, nil, "", false, true).Decode(&pstree.PstreeEntry{})
	if err != nil {
		return 0, err
	}
	var top uint32
	for _, e := range img.Entries {
		pe, ok := e.Message.(*pstree.PstreeEntry)
		if !ok {
			return 0, fmt.Errorf("not a pstree entry")
		}
		for _, p := range append([]uint32{pe.GetPid(), pe.GetPgid(), pe.GetSid()}, pe.GetThreads()...) {
			top = max(top, p)
		}
	}
	if top == 0 {
		return 0, fmt.Errorf("no task")
	}
	return top, nil
}

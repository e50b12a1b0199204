package sandbox

import (
	"fmt"
	"sync"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/internal/oplock"
	"github.com/minicri/minicri/internal/proc"
	"github.com/minicri/minicri/internal/published"
)

// Sandbox is one pod sandbox in memory.
type Sandbox struct {
	rec    Record // immutable after creation; its Status is the initial one
	status *published.Value[Status]

	op      *oplock.Lock // serialises Stop and Remove
	removed bool         // set under op once Remove finished

	procMu sync.Mutex
	procs  []*proc.Handle // the pause and the monitor; empty once stopped or lost
}

func newSandbox(rec Record, recordPath string) *Sandbox {
	sb := &Sandbox{rec: rec, op: oplock.New()}
	sb.status = published.New(rec.Status, recordPath, func(st Status) any {
		r := sb.rec
		r.Status = st
		return r
	})
	return sb
}

// ID returns the sandbox ID.
func (sb *Sandbox) ID() string { return sb.rec.ID }

// Status returns the published status.
func (sb *Sandbox) Status() Status { return sb.status.Load() }

// update builds the next status with fn, persists the record with it, and
// only then publishes it. A transition the state machine forbids fails.
func (sb *Sandbox) update(fn func(Status) Status) error {
	_, err := sb.status.Update(func(cur Status) (Status, error) {
		next := fn(cur)
		return next, checkTransition(cur.State, next.State)
	})
	if err != nil {
		return fmt.Errorf("update sandbox %s: %w", sb.rec.ID, err)
	}
	return nil
}

// setProcs records the handles on the pod's pause and monitor, closing the
// previous ones.
func (sb *Sandbox) setProcs(hs ...*proc.Handle) {
	sb.procMu.Lock()
	defer sb.procMu.Unlock()
	closeAll(sb.procs)
	sb.procs = hs
}

// procsAlive reports whether the pause and the monitor both still run: a
// pod whose monitor died cannot start containers any more, so it is not
// ready either, and the kubelet recreates it.
func (sb *Sandbox) procsAlive() bool {
	sb.procMu.Lock()
	defer sb.procMu.Unlock()
	for _, h := range sb.procs {
		if !h.Alive() {
			return false
		}
	}
	return len(sb.procs) > 0
}

func closeAll(hs []*proc.Handle) {
	for _, h := range hs {
		h.Close()
	}
}

// openProcs opens handles on the recorded pause and monitor; it fails if
// either is gone.
func openProcs(st Status) ([]*proc.Handle, error) {
	var hs []*proc.Handle
	for _, ref := range []proc.Ref{st.Pause, st.Monitor} {
		h, err := proc.Open(ref)
		if err != nil {
			closeAll(hs)
			return nil, fmt.Errorf("process %d: %w", ref.PID, err)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// Info is a consistent read-only view of a sandbox for callers.
type Info struct {
	Record
	// Ready is State == ready with the pause and the monitor still running.
	Ready bool
	// CgroupDir is the pause's cgroup in the hierarchy ("/a/b/<id>", or
	// "/x.slice/.../minicri-<id>.scope" under systemd).
	CgroupDir string
}

// Info returns the sandbox's current view. A ready sandbox whose pause or
// monitor has died reads as not ready.
func (sb *Sandbox) Info() Info {
	rec := sb.rec
	rec.Status = sb.Status()
	ready := rec.Status.State == StateReady && sb.procsAlive()
	if rec.Status.State == StateReady && !ready {
		rec.Status.State = StateNotReady
	}
	return Info{Record: rec, Ready: ready, CgroupDir: cgdriver.FSPath(rec.CgroupPath)}
}

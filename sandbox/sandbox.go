package sandbox

import (
	"fmt"
	"sync"

	"github.com/minicri/minicri/internal/proc"
	"github.com/minicri/minicri/internal/published"
)

// Sandbox is one pod sandbox in memory.
type Sandbox struct {
	rec    Record // immutable after creation; its Status is the initial one
	status *published.Value[Status]

	op      sync.Mutex // serialises Stop and Remove
	removed bool       // set under op once Remove finished

	pauseMu sync.Mutex
	pause   *proc.Handle // nil when the pause is gone or unknown
}

func newSandbox(rec Record, recordPath string) *Sandbox {
	sb := &Sandbox{rec: rec}
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

// setPause records the handle on the running pause.
func (sb *Sandbox) setPause(h *proc.Handle) {
	sb.pauseMu.Lock()
	defer sb.pauseMu.Unlock()
	if sb.pause != nil {
		sb.pause.Close()
	}
	sb.pause = h
}

// pauseAlive reports whether the pause process still runs.
func (sb *Sandbox) pauseAlive() bool {
	sb.pauseMu.Lock()
	defer sb.pauseMu.Unlock()
	return sb.pause != nil && sb.pause.Alive()
}

// Info is a consistent read-only view of a sandbox for callers.
type Info struct {
	Record
	// Ready is State == ready with the pause still running.
	Ready bool
}

// Info returns the sandbox's current view. A ready sandbox whose pause has
// died reads as not ready.
func (sb *Sandbox) Info() Info {
	rec := sb.rec
	rec.Status = sb.Status()
	ready := rec.Status.State == StateReady && sb.pauseAlive()
	if rec.Status.State == StateReady && !ready {
		rec.Status.State = StateNotReady
	}
	return Info{Record: rec, Ready: ready}
}

package steps

import (
	"context"
	"sync/atomic"
	"time"
)

// Observer is told of every step Run executes, of each part of a Parallel
// step, and of each undo of a rollback (named "undo <step>"): the daemon sets one to feed its metrics and traces, so
// that the domain packages that run steps know nothing of either.
type Observer interface {
	// StepStarted returns the context the step's Do runs with (a trace
	// span's, say) and a function called once Do has returned.
	StepStarted(ctx context.Context, name string) (context.Context, func(d time.Duration, err error))
}

type observerBox struct{ o Observer }

var current atomic.Pointer[observerBox]

// SetObserver makes o the observer of every step from now on; nil removes
// it. Without one, a step costs nothing more than its own work.
func SetObserver(o Observer) {
	if o == nil {
		current.Store(nil)
		return
	}
	current.Store(&observerBox{o})
}

// observed runs s.Do, told to the observer if there is one.
func observed(ctx context.Context, s Step, start time.Time) error {
	box := current.Load()
	if box == nil {
		return s.Do(ctx)
	}
	sctx, done := box.o.StepStarted(ctx, s.Name)
	err := s.Do(sctx)
	done(time.Since(start), err)
	return err
}

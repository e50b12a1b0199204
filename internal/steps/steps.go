// Package steps runs an RPC as a short list of named steps with an explicit
// undo stack: when a step fails, its own undo and then the undo functions of
// the steps that completed run in reverse order, so nothing is left behind,
// not even the half-done work of the step that failed.
package steps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Step is one named piece of work. Undo, when set, reverts Do. It runs for
// a step whose Do failed too, so it must revert whatever part of Do took
// effect, and be a no-op for what did not; it must also be idempotent
// because crash recovery may run it again. (A Do never needs to clean up
// after itself: that is what Undo is for.)
type Step struct {
	Name string
	Do   func(ctx context.Context) error
	Undo func(ctx context.Context) error
}

// Timing is how long one step took.
type Timing struct {
	Name     string
	Duration time.Duration
}

// UndoTimeout bounds the whole rollback, which runs on a context detached
// from the caller's (a cancelled request must still be cleaned up).
var UndoTimeout = 2 * time.Minute

// Run executes the steps in order. On the first failure it undoes that step
// and the ones before it, in reverse order, and returns the step's error
// wrapped with its name, joined with any undo errors.
func Run(ctx context.Context, log *slog.Logger, list []Step) ([]Timing, error) {
	timings := make([]Timing, 0, len(list))
	for i, s := range list {
		start := time.Now()
		err := observed(ctx, s, start)
		timings = append(timings, Timing{s.Name, time.Since(start)})
		if err != nil {
			err = fmt.Errorf("%s: %w", s.Name, err)
			return timings, errors.Join(err, rollback(ctx, log, list[:i+1]))
		}
	}
	return timings, nil
}

func rollback(ctx context.Context, log *slog.Logger, done []Step) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), UndoTimeout)
	defer cancel()
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		s := done[i]
		if s.Undo == nil {
			continue
		}
		if err := observed(ctx, Step{Name: "undo " + s.Name, Do: s.Undo}, time.Now()); err != nil {
			log.Error("undo failed", "step", s.Name, "err", err)
			errs = append(errs, fmt.Errorf("undo %s: %w", s.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Parallel combines steps into one that runs their Do functions at once and
// fails if any fails. Its Undo undoes every part, in reverse order: as for
// any step, Run calls it when the combined Do fails, so the parts that
// succeeded and the half-done work of those that failed are both undone.
func Parallel(name string, parts ...Step) Step {
	return Step{
		Name: name,
		Do: func(ctx context.Context) error {
			errs := make([]error, len(parts))
			doneCh := make(chan int, len(parts))
			for i := range parts {
				go func() {
					errs[i] = observed(ctx, parts[i], time.Now())
					doneCh <- i
				}()
			}
			for range parts {
				<-doneCh
			}
			var failed []error
			for i, err := range errs {
				if err != nil {
					failed = append(failed, fmt.Errorf("%s: %w", parts[i].Name, err))
				}
			}
			return errors.Join(failed...)
		},
		Undo: func(ctx context.Context) error {
			var errs []error
			for i := len(parts) - 1; i >= 0; i-- {
				if parts[i].Undo != nil {
					if err := parts[i].Undo(ctx); err != nil {
						errs = append(errs, fmt.Errorf("undo %s: %w", parts[i].Name, err))
					}
				}
			}
			return errors.Join(errs...)
		},
	}
}

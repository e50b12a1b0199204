// Package oplock is the per-object operation lock of containers and
// sandboxes: a mutex whose acquisition gives up when the caller's context
// ends, so that a request waiting behind a hung operation (a CRIU dump, a
// CNI plugin) returns at its deadline instead of blocking forever.
package oplock

import (
	"context"
	"fmt"

	"golang.org/x/sync/semaphore"
)

// Lock serialises the operations on one object. Make it with New.
type Lock struct{ sem *semaphore.Weighted }

// New returns an unlocked Lock.
func New() *Lock { return &Lock{sem: semaphore.NewWeighted(1)} }

// Acquire takes the lock, or returns an error wrapping ctx.Err() when ctx
// ends first.
func (l *Lock) Acquire(ctx context.Context) error {
	if err := l.sem.Acquire(ctx, 1); err != nil {
		return fmt.Errorf("waiting for another operation to finish: %w", err)
	}
	return nil
}

// TryAcquire takes the lock if it is free, without waiting.
func (l *Lock) TryAcquire() bool { return l.sem.TryAcquire(1) }

// Unlock releases the lock.
func (l *Lock) Unlock() { l.sem.Release(1) }

package network

import (
	"context"
	"fmt"
	"sync"

	"github.com/minicri/minicri/internal/oplock"
)

// keyLock serialises work per key (pod ID) without a global lock: one
// oplock per key in use. Waiting for a key ends with the caller's context:
// a CNI call that hangs holds its pod's key, and must not hold every later
// request for that pod past its deadline.
type keyLock struct {
	mu    sync.Mutex
	locks map[string]*keyLockEntry
}

type keyLockEntry struct {
	lock *oplock.Lock
	refs int // holders and waiters: the entry goes with the last
}

func newKeyLock() *keyLock {
	return &keyLock{locks: map[string]*keyLockEntry{}}
}

// lock locks key and returns its unlock function, or an error wrapping
// ctx.Err() when ctx ends first. A free key is taken even when ctx has
// ended (the undo of a setup that ran out of time still tears down).
func (k *keyLock) lock(ctx context.Context, key string) (unlock func(), err error) {
	k.mu.Lock()
	e := k.locks[key]
	if e == nil {
		e = &keyLockEntry{lock: oplock.New()}
		k.locks[key] = e
	}
	e.refs++
	k.mu.Unlock()

	if !e.lock.TryAcquire() {
		if err := e.lock.Acquire(ctx); err != nil {
			k.release(key, e)
			return nil, fmt.Errorf("pod %s network: %w", key, err)
		}
	}
	return func() {
		e.lock.Unlock()
		k.release(key, e)
	}, nil
}

func (k *keyLock) release(key string, e *keyLockEntry) {
	k.mu.Lock()
	e.refs--
	if e.refs == 0 {
		delete(k.locks, key)
	}
	k.mu.Unlock()
}

package network

import (
	"context"
	"fmt"
	"sync"
)

// keyLock serialises work per key (pod ID) without a global lock. Waiting
// for a key ends with the caller's context: a CNI call that hangs holds its
// pod's key, and must not hold every later request for that pod past its
// deadline.
type keyLock struct {
	mu    sync.Mutex
	locks map[string]*keyLockEntry
}

type keyLockEntry struct {
	held chan struct{} // one slot: full while the key is held
	refs int
}

func newKeyLock() *keyLock {
	return &keyLock{locks: map[string]*keyLockEntry{}}
}

// lock locks key and returns its unlock function, or an error wrapping
// ctx.Err() when ctx ends first.
func (k *keyLock) lock(ctx context.Context, key string) (unlock func(), err error) {
	k.mu.Lock()
	e := k.locks[key]
	if e == nil {
		e = &keyLockEntry{held: make(chan struct{}, 1)}
		k.locks[key] = e
	}
	e.refs++
	k.mu.Unlock()

	unlock = func() {
		<-e.held
		k.release(key, e)
	}
	select { // a free key is taken even when ctx has ended
	case e.held <- struct{}{}:
		return unlock, nil
	default:
	}
	select {
	case e.held <- struct{}{}:
		return unlock, nil
	case <-ctx.Done():
		k.release(key, e)
		return nil, fmt.Errorf("waiting for another network operation on pod %s: %w", key, ctx.Err())
	}
}

func (k *keyLock) release(key string, e *keyLockEntry) {
	k.mu.Lock()
	e.refs--
	if e.refs == 0 {
		delete(k.locks, key)
	}
	k.mu.Unlock()
}

package network

import "sync"

// keyLock serialises work per key (pod ID) without a global lock.
type keyLock struct {
	mu    sync.Mutex
	locks map[string]*keyLockEntry
}

type keyLockEntry struct {
	mu   sync.Mutex
	refs int
}

func newKeyLock() *keyLock {
	return &keyLock{locks: map[string]*keyLockEntry{}}
}

// lock locks key and returns its unlock function.
func (k *keyLock) lock(key string) (unlock func()) {
	k.mu.Lock()
	e := k.locks[key]
	if e == nil {
		e = &keyLockEntry{}
		k.locks[key] = e
	}
	e.refs++
	k.mu.Unlock()

	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// Package published holds a value that is persisted before it is published:
// readers always see a value that is already on disk, never one a crash
// could lose, and never a half-updated one.
package published

import (
	"sync"
	"sync/atomic"

	"github.com/minicri/minicri/internal/atomicfile"
)

// Value is an immutable value of type S, persisted as the document that
// Encode builds from it.
type Value[S any] struct {
	mu     sync.Mutex // serialises updates
	cur    atomic.Pointer[S]
	path   string
	encode func(S) any
}

// New publishes initial (already persisted) and persists later updates to
// path as encode(value).
func New[S any](initial S, path string, encode func(S) any) *Value[S] {
	v := &Value[S]{path: path, encode: encode}
	v.cur.Store(&initial)
	return v
}

// Load returns the published value.
func (v *Value[S]) Load() S { return *v.cur.Load() }

// Update builds the next value from the current one with fn, writes it
// atomically, and only then publishes it. If fn or the write fails, the
// current value stays published.
func (v *Value[S]) Update(fn func(S) (S, error)) (S, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	next, err := fn(*v.cur.Load())
	if err != nil {
		return *v.cur.Load(), err
	}
	if err := atomicfile.WriteJSON(v.path, v.encode(next)); err != nil {
		return *v.cur.Load(), err
	}
	v.cur.Store(&next)
	return next, nil
}

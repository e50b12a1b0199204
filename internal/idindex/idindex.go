// Package idindex indexes objects by 64-hex IDs and finds them by full ID or
// by a unique ID prefix, as crictl and the kubelet's users expect.
package idindex

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
)

// Lookup errors.
var (
	ErrNotFound  = errors.New("no such ID")
	ErrAmbiguous = errors.New("ID prefix is ambiguous")
	ErrEmpty     = errors.New("empty ID")
)

// Index maps IDs to values; it is safe for concurrent use.
type Index[T any] struct {
	mu   sync.RWMutex
	byID map[string]T
}

// New returns an empty index.
func New[T any]() *Index[T] { return &Index[T]{byID: map[string]T{}} }

// Add stores v under id.
func (x *Index[T]) Add(id string, v T) {
	x.mu.Lock()
	x.byID[id] = v
	x.mu.Unlock()
}

// Delete forgets id.
func (x *Index[T]) Delete(id string) {
	x.mu.Lock()
	delete(x.byID, id)
	x.mu.Unlock()
}

// Get finds the value of a full ID or of a unique ID prefix.
func (x *Index[T]) Get(idOrPrefix string) (T, error) {
	var zero T
	if idOrPrefix == "" {
		return zero, ErrEmpty
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if v, ok := x.byID[idOrPrefix]; ok {
		return v, nil
	}
	found, n := zero, 0
	for id, v := range x.byID {
		if strings.HasPrefix(id, idOrPrefix) {
			found, n = v, n+1
		}
	}
	switch n {
	case 0:
		return zero, ErrNotFound
	case 1:
		return found, nil
	}
	return zero, ErrAmbiguous
}

// All returns every value, in no particular order.
func (x *Index[T]) All() []T {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]T, 0, len(x.byID))
	for _, v := range x.byID {
		out = append(out, v)
	}
	return out
}

// Len returns the number of values.
func (x *Index[T]) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byID)
}

// NewID returns a fresh random 64-hex ID, as containerd and CRI-O use.
func NewID() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error()) // never fails on Linux
	}
	return hex.EncodeToString(b)
}

// LabelsMatch reports whether labels hold every key/value of selector (the
// CRI's label_selector).
func LabelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

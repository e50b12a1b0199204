package network

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A hung CNI call holds its pod's key; a later Setup or Teardown of that pod
// gives up at its deadline, and other pods are not held at all.
func TestKeyLockGivesUpAtTheDeadline(t *testing.T) {
	k := newKeyLock()
	unlock, err := k.lock(context.Background(), "pod")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := k.lock(ctx, "pod"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock of a held key: got %v, want DeadlineExceeded", err)
	}
	other, err := k.lock(ctx, "other")
	if err != nil {
		t.Fatalf("another key: %v", err)
	}
	other()
	got := make(chan func(), 1)
	go func() {
		u, _ := k.lock(context.Background(), "pod")
		got <- u
	}()
	select {
	case <-got:
		t.Fatal("a held key was taken twice")
	case <-time.After(20 * time.Millisecond):
	}
	unlock()
	(<-got)()
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.locks) != 0 {
		t.Fatalf("entries left: %v", k.locks)
	}
}

// The undo of a setup that ran out of time still gets its free key.
func TestKeyLockTakesAFreeKeyAfterTheDeadline(t *testing.T) {
	k := newKeyLock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	unlock, err := k.lock(ctx, "pod")
	if err != nil {
		t.Fatalf("free key with an ended context: %v", err)
	}
	if _, err := k.lock(ctx, "pod"); !errors.Is(err, context.Canceled) {
		t.Fatalf("held key with an ended context: %v", err)
	}
	unlock()
}

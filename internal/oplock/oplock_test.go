package oplock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestAcquireGivesUpAtTheDeadline(t *testing.T) {
	l := New()
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire of a held lock: got %v, want DeadlineExceeded", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := l.Acquire(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire of a held lock with a cancelled context: got %v, want Canceled", err)
	}
	l.Unlock()
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatalf("acquire after unlock: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = l.Acquire(context.Background()); close(done) }()
	select {
	case <-done:
		t.Fatal("Acquire took a held lock")
	case <-time.After(20 * time.Millisecond):
	}
	l.Unlock()
	<-done
}

func TestTryAcquire(t *testing.T) {
	l := New()
	if !l.TryAcquire() {
		t.Fatal("a free lock was not taken")
	}
	if l.TryAcquire() {
		t.Fatal("a held lock was taken")
	}
	l.Unlock()
	if !l.TryAcquire() {
		t.Fatal("an unlocked lock was not taken")
	}
}

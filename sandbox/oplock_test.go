package sandbox

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// The attack: an operation holds a sandbox's lock and never finishes (a
// container of the pod stuck in a hung checkpoint, a CNI plugin that never
// returns). StopPodSandbox and RemovePodSandbox with a deadline must give up
// at the deadline with DeadlineExceeded, not wait forever.
func TestOperationsGiveUpOnABusySandboxAtTheirDeadline(t *testing.T) {
	m := &Manager{store: newStore()}
	sb := newSandbox(Record{ID: "busy", Status: Status{State: StateReady}}, filepath.Join(t.TempDir(), "rec.json"))
	m.store.add(sb)
	sb.op.Acquire(context.Background()) // the hung operation; never released
	ops := map[string]func(context.Context) error{
		"Stop":   func(ctx context.Context) error { return m.Stop(ctx, "busy") },
		"Remove": func(ctx context.Context) error { return m.Remove(ctx, "busy") },
	}
	for name, op := range ops {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- op(ctx) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s on a busy sandbox: got %v, want DeadlineExceeded", name, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("%s returned after %v, past its deadline", name, d)
			}
		case <-time.After(3 * time.Second):
			t.Errorf("%s on a busy sandbox ignored its deadline", name)
		}
		cancel()
	}
}

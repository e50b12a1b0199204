package container

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// The attack: an operation holds a container's lock and never finishes (a
// hung CRIU under CheckpointContainer). Stop, Remove, Start and
// UpdateResources with a deadline must give up at the deadline with
// DeadlineExceeded, not wait forever.
func TestOperationsGiveUpOnABusyContainerAtTheirDeadline(t *testing.T) {
	m := &Manager{store: newStore()}
	c := newContainer(Record{ID: "busy", Status: Status{State: StateRunning}}, filepath.Join(t.TempDir(), "rec.json"))
	m.store.add(c)
	c.op.Acquire(context.Background()) // the hung operation; never released
	ops := map[string]func(context.Context) error{
		"Stop":            func(ctx context.Context) error { return m.Stop(ctx, "busy", time.Second) },
		"Remove":          func(ctx context.Context) error { return m.Remove(ctx, "busy") },
		"Start":           func(ctx context.Context) error { return m.Start(ctx, "busy") },
		"UpdateResources": func(ctx context.Context) error { return m.UpdateResources(ctx, "busy", Resources{}) },
	}
	for name, op := range ops {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- op(ctx) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s on a busy container: got %v, want DeadlineExceeded", name, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("%s returned after %v, past its deadline", name, d)
			}
		case <-time.After(3 * time.Second):
			t.Errorf("%s on a busy container ignored its deadline", name)
		}
		cancel()
	}
}

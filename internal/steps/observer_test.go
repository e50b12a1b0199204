package steps

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"
)

type ctxKey struct{}

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) StepStarted(ctx context.Context, name string) (context.Context, func(time.Duration, error)) {
	return context.WithValue(ctx, ctxKey{}, name), func(d time.Duration, err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, name+" "+map[bool]string{true: "failed", false: "ok"}[err != nil])
		if d < 0 {
			r.events = append(r.events, "negative duration")
		}
	}
}

// The observer sees each step, each part of a Parallel step and each undo
// with its outcome, and the step's Do runs with the context the observer
// returned.
func TestObserverSeesStepsAndParallelParts(t *testing.T) {
	r := &recorder{}
	SetObserver(r)
	defer SetObserver(nil)
	var seen string
	list := []Step{
		{Name: "a", Do: func(ctx context.Context) error { seen, _ = ctx.Value(ctxKey{}).(string); return nil },
			Undo: func(context.Context) error { return nil }},
		Parallel("both",
			Step{Name: "x", Do: func(context.Context) error { return nil }},
			Step{Name: "y", Do: func(context.Context) error { return errors.New("boom") }}),
	}
	if _, err := Run(context.Background(), slog.Default(), list); err == nil {
		t.Fatal("no error")
	}
	if seen != "a" {
		t.Fatalf("step a ran with the context of %q", seen)
	}
	sort.Strings(r.events)
	want := []string{"a ok", "both failed", "undo a ok", "undo both ok", "x ok", "y failed"}
	if !reflect.DeepEqual(r.events, want) {
		t.Fatalf("events %v, want %v", r.events, want)
	}
}

package steps

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
)

type trace struct {
	mu  sync.Mutex
	ops []string
}

func (tr *trace) add(s string) { tr.mu.Lock(); tr.ops = append(tr.ops, s); tr.mu.Unlock() }

func (tr *trace) step(name string, fail bool) Step {
	return Step{
		Name: name,
		Do: func(context.Context) error {
			tr.add("do " + name)
			if fail {
				return errors.New("boom")
			}
			return nil
		},
		Undo: func(context.Context) error { tr.add("undo " + name); return nil },
	}
}

func TestRunUndoesCompletedStepsInReverse(t *testing.T) {
	tr := &trace{}
	_, err := Run(context.Background(), slog.Default(), []Step{tr.step("a", false), tr.step("b", false), tr.step("c", true), tr.step("d", false)})
	if err == nil || !strings.Contains(err.Error(), "c: boom") {
		t.Fatalf("err = %v", err)
	}
	want := []string{"do a", "do b", "do c", "undo b", "undo a"}
	if !reflect.DeepEqual(tr.ops, want) {
		t.Fatalf("ops = %v, want %v", tr.ops, want)
	}
}

func TestRunSuccessReturnsTimings(t *testing.T) {
	tr := &trace{}
	timings, err := Run(context.Background(), slog.Default(), []Step{tr.step("a", false), tr.step("b", false)})
	if err != nil || len(timings) != 2 || timings[1].Name != "b" {
		t.Fatalf("timings %v err %v", timings, err)
	}
	if len(tr.ops) != 2 {
		t.Fatalf("undo ran on success: %v", tr.ops)
	}
}

func TestRollbackRunsOnCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var undoCtxErr error
	list := []Step{
		{Name: "a", Do: func(context.Context) error { return nil }, Undo: func(c context.Context) error { undoCtxErr = c.Err(); return nil }},
		{Name: "b", Do: func(context.Context) error { cancel(); return context.Canceled }},
	}
	if _, err := Run(ctx, slog.Default(), list); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if undoCtxErr != nil {
		t.Fatalf("undo saw a cancelled context: %v", undoCtxErr)
	}
}

func TestParallelUndoesSuccessfulPartsOnFailure(t *testing.T) {
	tr := &trace{}
	p := Parallel("both", tr.step("x", false), tr.step("y", true))
	err := p.Do(context.Background())
	if err == nil || !strings.Contains(err.Error(), "y: boom") {
		t.Fatalf("err = %v", err)
	}
	joined := strings.Join(tr.ops, ",")
	if !strings.Contains(joined, "undo x") || strings.Contains(joined, "undo y") {
		t.Fatalf("ops = %v", tr.ops)
	}
}

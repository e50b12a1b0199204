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

// A failing step's own half-done work is undone first (its Undo runs), then
// the steps that completed, in reverse order; later steps never run.
func TestRunUndoesTheFailingStepThenCompletedStepsInReverse(t *testing.T) {
	tr := &trace{}
	_, err := Run(context.Background(), slog.Default(), []Step{tr.step("a", false), tr.step("b", false), tr.step("c", true), tr.step("d", false)})
	if err == nil || !strings.Contains(err.Error(), "c: boom") {
		t.Fatalf("err = %v", err)
	}
	want := []string{"do a", "do b", "do c", "undo c", "undo b", "undo a"}
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

// A step that leaves part of its work behind when it fails (as a mount
// helper that attached some mounts before an error) gets it undone by Run.
func TestRunUndoesPartialWorkOfTheFailingStep(t *testing.T) {
	var held []int
	step := Step{
		Name: "attach three",
		Do: func(context.Context) error {
			for n := range 3 {
				if n == 2 {
					return errors.New("third attach failed")
				}
				held = append(held, n)
			}
			return nil
		},
		Undo: func(context.Context) error { held = nil; return nil },
	}
	if _, err := Run(context.Background(), slog.Default(), []Step{step}); err == nil {
		t.Fatal("no error")
	}
	if len(held) != 0 {
		t.Fatalf("the failing step's partial work is left: %v", held)
	}
}

// Inside Run, a failed Parallel undoes every part once: the ones that
// succeeded and the one that failed (its partial work).
func TestParallelFailureUndoesEveryPartOnce(t *testing.T) {
	tr := &trace{}
	_, err := Run(context.Background(), slog.Default(), []Step{tr.step("a", false), Parallel("both", tr.step("x", false), tr.step("y", true))})
	if err == nil || !strings.Contains(err.Error(), "y: boom") {
		t.Fatalf("err = %v", err)
	}
	counts := map[string]int{}
	for _, op := range tr.ops {
		counts[op]++
	}
	for _, op := range []string{"undo x", "undo y", "undo a"} {
		if counts[op] != 1 {
			t.Fatalf("%q ran %d times; ops = %v", op, counts[op], tr.ops)
		}
	}
	if last := tr.ops[len(tr.ops)-1]; last != "undo a" {
		t.Fatalf("a was not undone last: %v", tr.ops)
	}
}

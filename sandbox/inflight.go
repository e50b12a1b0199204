package sandbox

import (
	"context"
	"sync"
)

// inflight remembers RunPodSandbox operations by pod metadata, so that a
// kubelet that retries after its RPC timed out gets the pod the first call is
// creating (or created) instead of an error or a second pod, as CRI-O's
// resourcestore does.
type inflight struct {
	mu  sync.Mutex
	ops map[string]*runOp
}

type runOp struct {
	done chan struct{}
	id   string
	err  error
}

func newInflight() *inflight { return &inflight{ops: map[string]*runOp{}} }

// begin returns the operation for key and whether the caller must run it.
func (f *inflight) begin(key string) (*runOp, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if op, ok := f.ops[key]; ok {
		return op, false
	}
	op := &runOp{done: make(chan struct{})}
	f.ops[key] = op
	return op, true
}

// finish publishes the result. A failed operation is forgotten at once; a
// successful one stays until a caller claims it.
func (f *inflight) finish(key string, op *runOp, id string, err error) {
	op.id, op.err = id, err
	if err != nil {
		f.drop(key, op)
	}
	close(op.done)
}

// wait blocks until op finishes or ctx ends; a successful result is claimed.
func (f *inflight) wait(ctx context.Context, key string, op *runOp) (string, error) {
	select {
	case <-op.done:
		if op.err == nil {
			f.drop(key, op)
		}
		return op.id, op.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// drop forgets op if it is still the operation for key.
func (f *inflight) drop(key string, op *runOp) {
	f.mu.Lock()
	if f.ops[key] == op {
		delete(f.ops, key)
	}
	f.mu.Unlock()
}

// forget drops whatever is remembered for key (the pod was removed).
func (f *inflight) forget(key string) {
	f.mu.Lock()
	delete(f.ops, key)
	f.mu.Unlock()
}

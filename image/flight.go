package image

import (
	"context"
	"sync"
)

// flightGroup runs one function per key at a time and lets every caller for
// that key wait for its result: concurrent pulls of one layer share one
// download. Unlike singleflight, the shared work is cancelled only when all
// of its waiters have gone, and each waiter's progress tracker sees its bytes.
type flightGroup struct {
	mu sync.Mutex
	m  map[string]*flight
}

type flight struct {
	done     chan struct{}
	err      error
	waiters  int
	cancel   context.CancelFunc
	progress progressSet
}

// do runs fn for key unless a run is under way, then waits for the run or
// for ctx. fn gets a context that outlives any single caller.
func (g *flightGroup) do(ctx context.Context, key string, p *pullProgress, fn func(ctx context.Context, ps *progressSet) error) error {
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*flight{}
	}
	f, ok := g.m[key]
	if !ok {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		g.m[key] = f
		go func() {
			defer cancel()
			err := fn(fctx, &f.progress)
			g.mu.Lock()
			if g.m[key] == f {
				delete(g.m, key)
			}
			f.err = err
			g.mu.Unlock()
			close(f.done)
		}()
	}
	f.waiters++
	f.progress.add(p)
	g.mu.Unlock()

	select {
	case <-f.done:
		f.progress.remove(p)
		return f.err
	case <-ctx.Done():
		g.mu.Lock()
		f.waiters--
		last := f.waiters == 0
		if last {
			// Nobody wants it any more: stop it, and let the next caller
			// start afresh rather than join a dying run.
			f.cancel()
			if g.m[key] == f {
				delete(g.m, key)
			}
		}
		g.mu.Unlock()
		f.progress.remove(p)
		if last {
			// Wait for the cancelled run to clean up, so that nothing of
			// this pull is still running when it returns.
			<-f.done
		}
		return context.Cause(ctx)
	}
}

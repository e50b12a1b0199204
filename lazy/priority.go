package lazy

import (
	"context"
	"sync"
	"time"
)

// DefaultSilence is how long the background fetch waits after the last
// prioritized fetch of the process ended before it asks the registry again.
const DefaultSilence = time.Second

// priorities orders the registry fetches of the process, every layer
// together, much as stargz-snapshotter's background task manager does: a
// prefetch is prioritized, and the background fetch runs only once none has
// been in flight for a silence. Completing a layer in the background means
// decompressing it, and on a small node that takes the CPU the container
// whose files were just prefetched needs to start. A read's own fetch does
// not hold the background back (stargz's does): a container that reads
// much of its image is served sooner by the background fetch than by a
// range request per miss.
type priorities struct {
	mu   sync.Mutex
	busy int       // prioritized fetches in flight
	last time.Time // when the last one ended
}

var prio priorities

// begin marks a prioritized fetch in flight until the returned end is called.
func (p *priorities) begin() (end func()) {
	p.mu.Lock()
	p.busy++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.busy--
			p.last = time.Now()
			p.mu.Unlock()
		})
	}
}

// quietFor is how long from now the process will have been without a
// prioritized fetch for silence, if none starts (0: it has been).
func (p *priorities) quietFor(silence time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy > 0 {
		return silence
	}
	return silence - time.Since(p.last)
}

// quiet returns once no prioritized fetch has been in flight for silence,
// or fails when ctx is done or closed is closed first.
func (p *priorities) quiet(ctx context.Context, closed <-chan struct{}, silence time.Duration) error {
	for {
		wait := p.quietFor(silence)
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-closed:
			t.Stop()
			return ErrClosed
		}
	}
}

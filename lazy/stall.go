package lazy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// stallTimer cancels a request when no byte came for d; nil (d 0) never does.
type stallTimer struct {
	t *time.Timer
	d time.Duration
}

func newStallTimer(d time.Duration, cancel context.CancelCauseFunc) *stallTimer {
	if d <= 0 {
		return nil
	}
	return &stallTimer{d: d, t: time.AfterFunc(d, func() {
		cancel(fmt.Errorf("%w: no byte in %v", ErrStalled, d))
	})}
}

// progress restarts the bound: bytes came.
func (s *stallTimer) progress() {
	if s != nil {
		s.t.Reset(s.d)
	}
}

func (s *stallTimer) stop() {
	if s != nil {
		s.t.Stop()
	}
}

// progressReader tells its stallTimer of each byte read.
type progressReader struct {
	r io.Reader
	s *stallTimer
}

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.s.progress()
	}
	return n, err
}

// stallCause names ErrStalled when the request failed because its stall
// timer cancelled it.
func stallCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, ErrStalled) {
		return fmt.Errorf("%w (%v)", cause, err)
	}
	return err
}

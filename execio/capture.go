package execio

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/minicri/minicri/ocirt"
)

// Output is what ExecSync keeps of an exec's stdout and stderr: the
// copying of each from its pipe, up to a cap.
type Output struct {
	stdout, stderr capped
	wg             sync.WaitGroup
	readers        []*os.File
}

// Capture gives p pipes for stdout and stderr whose read ends are drained
// into the Output: the first max bytes of each are kept, the rest read and
// dropped, never buffered.
func Capture(p *ocirt.ExecSpec, max int) (*Output, error) {
	o := &Output{stdout: capped{max: max}, stderr: capped{max: max}}
	for _, pair := range []struct {
		set func(*os.File)
		w   io.Writer
	}{
		{func(f *os.File) { p.Stdout = f }, &o.stdout},
		{func(f *os.File) { p.Stderr = f }, &o.stderr},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range o.readers {
				f.Close()
			}
			CloseChildEnds(p)
			return nil, err
		}
		o.readers = append(o.readers, r)
		pair.set(w)
		o.wg.Add(1)
		go func(dst io.Writer) {
			defer o.wg.Done()
			_, _ = io.Copy(dst, r) // ends when the pipe closes or the client is gone
		}(pair.w)
	}
	return o, nil
}

// CloseChildEnds closes the daemon's copies of the pipe ends the process got.
func CloseChildEnds(p *ocirt.ExecSpec) {
	for _, f := range []*os.File{p.Stdout, p.Stderr} {
		if f != nil {
			f.Close()
		}
	}
}

// Wait waits until the output hits EOF, up to max (0: no limit), then closes
// the read ends. Past max something the command left behind still holds the
// pipes (a background writer in the container): closing them ends the
// copiers, and the writer gets EPIPE, instead of both living on.
func (o *Output) Wait(max time.Duration) {
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	if max > 0 {
		select {
		case <-done:
		case <-time.After(max):
		}
	}
	for _, r := range o.readers {
		r.Close() // interrupts a pending Read: os.Pipe ends are pollable
	}
	<-done
}

// Bytes are what was kept of stdout and stderr; call it after Wait.
func (o *Output) Bytes() (stdout, stderr []byte) { return o.stdout.bytes(), o.stderr.bytes() }

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (c *capped) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.buf); room > 0 {
		if len(b) < room {
			room = len(b)
		}
		c.buf = append(c.buf, b[:room]...)
	}
	return len(b), nil
}

func (c *capped) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf
}

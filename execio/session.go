package execio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/ocirt"
)

// TermSize is a terminal size in characters.
type TermSize struct{ Width, Height uint16 }

// StreamIO are a client's streams for Exec and Attach; nil ones were not
// requested.
type StreamIO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
	Resize         <-chan TermSize // may be nil
}

// Session holds the daemon's ends of a streaming exec's stdio.
type Session struct {
	p        *ocirt.ExecSpec
	sio      StreamIO
	failed   func()     // the client is gone
	master   *os.File   // TTY: the PTY master
	stdinW   *os.File   // no TTY: the write end of the stdin pipe
	outR     []*os.File // no TTY: read ends of stdout, stderr
	children []*os.File // the process's ends, closed once it runs
	copiers  sync.WaitGroup
	stop     chan struct{} // ends the resize loop
	closed   sync.Once
}

// New gives p the ends of the stdio sio asks for: a terminal (the runtime
// hands its master to Started), else pipes; failed is called when the
// client is gone.
func New(p *ocirt.ExecSpec, sio StreamIO, failed func()) (*Session, error) {
	s := &Session{p: p, sio: sio, failed: failed, stop: make(chan struct{})}
	var err error
	if sio.TTY {
		s.prepareTTY()
	} else {
		err = s.preparePipes()
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Session) prepareTTY() {
	s.p.Process.Terminal = true
	if !hasEnv(s.p.Process.Env, "TERM") {
		s.p.Process.Env = append(s.p.Process.Env, "TERM=xterm")
	}
}

func (s *Session) preparePipes() error {
	if s.sio.Stdin != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		s.p.Stdin, s.stdinW = r, w
		s.children = append(s.children, r)
	}
	for _, set := range []func(*os.File){
		func(f *os.File) { s.p.Stdout = f },
		func(f *os.File) { s.p.Stderr = f },
	} {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		set(w)
		s.outR = append(s.outR, r)
		s.children = append(s.children, w)
	}
	return nil
}

// Started closes the process's ends, receives the terminal, and starts
// copying.
func (s *Session) Started(p ocirt.Process) error {
	for _, f := range s.children {
		f.Close()
	}
	s.children = nil
	if !s.sio.TTY {
		s.copyOut(s.sio.Stdout, s.outR[0])
		s.copyOut(s.sio.Stderr, s.outR[1])
		if s.stdinW != nil {
			go copyStdin(s.stdinW, s.sio.Stdin, true)
		}
		return nil
	}
	master, err := p.Console()
	if err != nil {
		return fmt.Errorf("receive terminal: %w", err)
	}
	s.master = master
	s.copyOut(s.sio.Stdout, master)
	if s.sio.Stdin != nil {
		go copyStdin(master, s.sio.Stdin, false)
	}
	go s.resizeLoop()
	return nil
}

// copyOut copies r to the client (or drops it when the client did not ask
// for it); a failed write means the client is gone.
func (s *Session) copyOut(w io.Writer, r *os.File) {
	if w == nil {
		w = io.Discard
	}
	s.copiers.Add(1)
	go func() {
		defer s.copiers.Done()
		if _, err := io.Copy(w, r); err != nil && !isEndOfTerminal(err) {
			s.failed()
			_, _ = io.Copy(io.Discard, r) // drain so the process never blocks on a full pipe
		}
	}()
}

// isEndOfTerminal is the error a PTY master reads once the slave is gone,
// or the one after the session closed it.
func isEndOfTerminal(err error) bool {
	return errors.Is(err, unix.EIO) || errors.Is(err, os.ErrClosed)
}

// copyStdin copies the client's stdin; closeAtEOF closes the pipe then (a
// terminal stays open: it carries the output too).
func copyStdin(dst *os.File, src io.Reader, closeAtEOF bool) {
	// An error is the client going away or the process closing its stdin:
	// either way there is no more input to give it.
	_, _ = io.Copy(dst, src)
	if closeAtEOF {
		dst.Close()
	}
}

func (s *Session) resizeLoop() {
	for {
		select {
		case sz, ok := <-s.sio.Resize:
			if !ok {
				return
			}
			// Fails only once the terminal is gone (the process exited):
			// there is nothing left to resize.
			_ = unix.IoctlSetWinsize(int(s.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: sz.Width, Row: sz.Height})
		case <-s.stop:
			return
		}
	}
}

// Drain waits for the output copiers; past max it closes the read ends,
// which ends them.
func (s *Session) Drain(max time.Duration) {
	done := make(chan struct{})
	go func() { s.copiers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(max):
		s.Close()
		<-done
	}
}

// Close releases every descriptor the session holds.
func (s *Session) Close() {
	s.closed.Do(func() {
		close(s.stop)
		for _, f := range append(append(s.children, s.outR...), s.master, s.stdinW) {
			if f != nil {
				f.Close()
			}
		}
	})
}

func hasEnv(env []string, key string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, key+"=") {
			return true
		}
	}
	return false
}

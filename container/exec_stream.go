package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/monitor"
	"github.com/minicri/minicri/ocirt"
)

// streamDrainTimeout bounds how long an exec waits for its output after the
// process exited: a background child may hold the pipes or terminal open.
const streamDrainTimeout = 2 * time.Second

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

// Exec runs cmd in a running container, joined to it as ExecSync does,
// connected to the client's streams, and returns its exit code. It returns
// once the process has exited and been reaped; when ctx ends or writing to
// the client fails (the client went away) the process is killed first.
// Nothing of the session outlives the call but a goroutine blocked reading
// the client's stdin, which ends when the client's stream closes.
func (m *Manager) Exec(ctx context.Context, id string, cmd []string, sio StreamIO) (int32, error) {
	if len(cmd) == 0 {
		return 0, fmt.Errorf("%w: exec needs a command", ErrInvalid)
	}
	h, sp, err := m.execProcess(id, cmd)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := newExecSession(&ocirt.ExecSpec{Process: sp}, sio, cancel)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	defer s.close()
	p, err := h.Exec(*s.p)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	if err := s.started(p); err != nil {
		// The session failed to start: kill and reap the process; the
		// session's error is the one to report.
		_ = p.Kill()
		_, _ = p.Wait()
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	code, err := waitExec(ctx, p, 0)
	s.drain(streamDrainTimeout)
	if err != nil {
		return 0, fmt.Errorf("exec %q in container %s: %w", cmd[0], id, err)
	}
	return code, nil
}

// execSession holds the daemon's ends of an exec's stdio.
type execSession struct {
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

func newExecSession(p *ocirt.ExecSpec, sio StreamIO, failed func()) (*execSession, error) {
	s := &execSession{p: p, sio: sio, failed: failed, stop: make(chan struct{})}
	var err error
	if sio.TTY {
		s.prepareTTY()
	} else {
		err = s.preparePipes()
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *execSession) prepareTTY() {
	s.p.Process.Terminal = true
	if !hasEnv(s.p.Process.Env, "TERM") {
		s.p.Process.Env = append(s.p.Process.Env, "TERM=xterm")
	}
}

func (s *execSession) preparePipes() error {
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

// started closes the process's ends, receives the terminal, and starts
// copying.
func (s *execSession) started(p ocirt.Process) error {
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
func (s *execSession) copyOut(w io.Writer, r *os.File) {
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

func (s *execSession) resizeLoop() {
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

// drain waits for the output copiers; past max it closes the read ends,
// which ends them.
func (s *execSession) drain(max time.Duration) {
	done := make(chan struct{})
	go func() { s.copiers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(max):
		s.close()
		<-done
	}
}

// close releases every descriptor the session holds.
func (s *execSession) close() {
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

// Attach connects the client's streams to a running container's stdio
// through its pod's monitor, until the container exits, the client
// detaches (closes stdin) or goes away (ctx ends). The container keeps
// running and logging.
func (m *Manager) Attach(ctx context.Context, id string, sio StreamIO) error {
	c, err := m.store.get(id)
	if err != nil {
		return err
	}
	if st := m.refresh(c); st.State != StateRunning {
		return fmt.Errorf("%w: container %s is %s, not running", ErrFailedPrecondition, c.ID(), st.State)
	}
	pod, err := m.opts.Pods.Pod(c.rec.PodID)
	if err != nil {
		return fmt.Errorf("attach to %s: %w", c.ID(), err)
	}
	sock := monitor.SocketPath(pod.MonitorDir)
	if !c.rec.Config.Stdin {
		sio.Stdin = nil
	}
	if sio.Resize != nil && c.rec.Config.TTY {
		resizeCtx, stopResize := context.WithCancel(ctx)
		defer stopResize()
		go m.forwardResize(resizeCtx, sock, c.ID(), sio.Resize)
	}
	err = monitor.Attach(ctx, sock, c.ID(), monitor.Streams{Stdin: sio.Stdin, Stdout: sio.Stdout, Stderr: sio.Stderr})
	if err != nil {
		return fmt.Errorf("attach to %s: %w", c.ID(), err)
	}
	return nil
}

func (m *Manager) forwardResize(ctx context.Context, sock, id string, sizes <-chan TermSize) {
	for {
		select {
		case sz, ok := <-sizes:
			if !ok {
				return
			}
			_, err := monitor.Call(ctx, sock, monitor.Request{Op: monitor.OpResize, ID: id, Width: sz.Width, Height: sz.Height})
			if err != nil {
				m.log.Debug("resize attached terminal", "container", id, "err", err)
			}
		case <-ctx.Done():
			return
		}
	}
}

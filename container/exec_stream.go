package container

import (
	"context"
	"fmt"
	"time"

	"github.com/minicri/minicri/execio"
	"github.com/minicri/minicri/monitor"
	"github.com/minicri/minicri/ocirt"
)

// streamDrainTimeout bounds how long an exec waits for its output after the
// process exited: a background child may hold the pipes or terminal open.
const streamDrainTimeout = 2 * time.Second

// TermSize is a terminal size in characters.
type TermSize = execio.TermSize

// StreamIO are a client's streams for Exec and Attach (see execio.StreamIO).
type StreamIO = execio.StreamIO

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
	e := &ocirt.ExecSpec{Process: sp}
	s, err := execio.New(e, sio, cancel)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	defer s.Close()
	p, err := h.Exec(*e)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	if err := s.Started(p); err != nil {
		// The session failed to start: kill and reap the process; the
		// session's error is the one to report.
		_ = p.Kill()
		_, _ = p.Wait()
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	code, err := waitExec(ctx, p, 0)
	s.Drain(streamDrainTimeout)
	if err != nil {
		return 0, fmt.Errorf("exec %q in container %s: %w", cmd[0], id, err)
	}
	return code, nil
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

package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/ocirt"
)

// MaxExecOutput caps each of stdout and stderr of ExecSync; the rest is
// read and dropped, never buffered. Both together stay under the 16 MiB the
// kubelet's CRI client accepts in one message.
const MaxExecOutput = 8<<20 - 64<<10

// ErrTimeout means an exec ran past its timeout (and was killed).
var ErrTimeout = errors.New("command timed out")

// ExecResult is the outcome of ExecSync.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}

// ExecSync runs cmd in a running container, joined to all its namespaces,
// cgroup, user and security settings, and returns its output. On timeout
// the command is killed and reaped before ExecSync returns.
func (m *Manager) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error) {
	if len(cmd) == 0 {
		return ExecResult{}, fmt.Errorf("%w: exec needs a command", ErrInvalid)
	}
	h, sp, err := m.execProcess(id, cmd)
	if err != nil {
		return ExecResult{}, err
	}
	e := &ocirt.ExecSpec{Process: sp}
	stdout, stderr := &capped{max: MaxExecOutput}, &capped{max: MaxExecOutput}
	drained, err := attachOutput(e, stdout, stderr)
	if err != nil {
		return ExecResult{}, err
	}
	p, err := h.Exec(*e)
	closeChildEnds(e)
	if err != nil {
		drained.wait(0)
		return ExecResult{}, fmt.Errorf("exec in container %s: %w", id, err)
	}
	code, err := waitExec(ctx, p, timeout)
	drained.wait(2 * time.Second)
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %q in container %s: %w", cmd[0], id, err)
	}
	return ExecResult{Stdout: stdout.bytes(), Stderr: stderr.bytes(), ExitCode: code}, nil
}

// execProcess loads the container and builds an exec process from its spec
// (without a terminal).
func (m *Manager) execProcess(id string, cmd []string) (ocirt.Handle, *specs.Process, error) {
	c, err := m.store.get(id)
	if err != nil {
		return nil, nil, err
	}
	if st := m.refresh(c); st.State != StateRunning {
		return nil, nil, fmt.Errorf("%w: container %s is %s, not running", ErrFailedPrecondition, c.ID(), st.State)
	}
	spec, err := m.loadSpec(c.ID())
	if err != nil {
		return nil, nil, err
	}
	if spec.Process == nil {
		return nil, nil, fmt.Errorf("spec of %s has no process", c.ID())
	}
	p := *spec.Process
	p.Args, p.Terminal = cmd, false
	h, err := m.loadOf(c)
	if err != nil {
		return nil, nil, fmt.Errorf("load container %s: %w", c.ID(), err)
	}
	return h, &p, nil
}

func (m *Manager) loadSpec(id string) (*specs.Spec, error) {
	data, err := os.ReadFile(filepath.Join(m.BundleDir(id), "config.json"))
	if err != nil {
		return nil, fmt.Errorf("read spec of %s: %w", id, err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("parse spec of %s: %w", id, err)
	}
	return &spec, nil
}

// waitExec waits for the exec'd process; past the timeout (or the caller's
// end) it kills it and still reaps it before returning.
func waitExec(ctx context.Context, p ocirt.Process, timeout time.Duration) (int32, error) {
	type result struct {
		ps  *os.ProcessState
		err error
	}
	done := make(chan result, 1)
	go func() {
		ps, err := p.Wait()
		done <- result{ps, err}
	}()
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var cause error
	select {
	case r := <-done:
		if r.ps == nil {
			return 0, fmt.Errorf("wait: %w", r.err)
		}
		return exitStatus(r.ps), nil
	case <-expired:
		cause = fmt.Errorf("%w after %s", ErrTimeout, timeout)
	case <-ctx.Done():
		cause = ctx.Err()
	}
	_ = p.Kill() // it may have exited already; <-done reaps it either way
	<-done
	return 0, cause
}

func exitStatus(ps *os.ProcessState) int32 {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int32(128 + int(ws.Signal())) //nolint:gosec // a signal number is below 65
	}
	return int32(ps.ExitCode()) //nolint:gosec // an exit status is 0..255 (or -1)
}

// attachOutput gives p pipes for stdout and stderr whose read ends are
// drained into the writers.
func attachOutput(p *ocirt.ExecSpec, stdout, stderr io.Writer) (*drain, error) {
	d := &drain{}
	for _, pair := range []struct {
		set func(*os.File)
		w   io.Writer
	}{
		{func(f *os.File) { p.Stdout = f }, stdout},
		{func(f *os.File) { p.Stderr = f }, stderr},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range d.readers {
				f.Close()
			}
			closeChildEnds(p)
			return nil, err
		}
		d.readers = append(d.readers, r)
		pair.set(w)
		d.wg.Add(1)
		go func(dst io.Writer) {
			defer d.wg.Done()
			_, _ = io.Copy(dst, r) // ends when the pipe closes or the client is gone
		}(pair.w)
	}
	return d, nil
}

// closeChildEnds closes the daemon's copies of the pipe ends the process got.
func closeChildEnds(p *ocirt.ExecSpec) {
	for _, f := range []*os.File{p.Stdout, p.Stderr} {
		if f != nil {
			f.Close()
		}
	}
}

// drain is the copying of an exec's output.
type drain struct {
	wg      sync.WaitGroup
	readers []*os.File
}

// wait waits until the output hits EOF, up to max (0: no limit), then closes
// the read ends. Past max something the command left behind still holds the
// pipes (a background writer in the container): closing them ends the
// copiers, and the writer gets EPIPE, instead of both living on.
func (d *drain) wait(max time.Duration) {
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	if max > 0 {
		select {
		case <-done:
		case <-time.After(max):
		}
	}
	for _, r := range d.readers {
		r.Close() // interrupts a pending Read: os.Pipe ends are pollable
	}
	<-done
}

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

package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/execio"
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
	out, err := execio.Capture(e, MaxExecOutput)
	if err != nil {
		return ExecResult{}, err
	}
	p, err := h.Exec(*e)
	execio.CloseChildEnds(e)
	if err != nil {
		out.Wait(0)
		return ExecResult{}, fmt.Errorf("exec in container %s: %w", id, err)
	}
	code, err := waitExec(ctx, p, timeout)
	out.Wait(2 * time.Second)
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %q in container %s: %w", cmd[0], id, err)
	}
	stdout, stderr := out.Bytes()
	return ExecResult{Stdout: stdout, Stderr: stderr, ExitCode: code}, nil
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

package monitor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/internal/proc"
)

// ready is the single line a monitor writes on its fd 3.
type ready struct {
	Error string `json:"error,omitempty"`
	State State  `json:"state"`
}

// The monitor's programs, next to minicri's: the long-lived monitor and
// its short-lived helper.
const (
	BinaryName       = "minicri-monitor"
	HelperBinaryName = "minicri-monitor-helper"
)

// CheckPrograms reports an error unless the monitor's programs are
// executable regular files next to exe (minicri's own binary).
func CheckPrograms(exe string) error {
	bin := filepath.Dir(exe)
	for _, name := range []string{BinaryName, HelperBinaryName} {
		p := filepath.Join(bin, name)
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("monitor program: %w (install it next to %s: make build)", err, exe)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("monitor program %s: not an executable file", p)
		}
	}
	return nil
}

// Launch starts a detached monitor for spec and waits until its pause runs.
// exe is minicri's own binary: the monitor and its helper are next to it. The monitor forks once and its
// parent exits, so it is re-parented away from the daemon and lives in a
// session of its own.
func Launch(ctx context.Context, exe string, spec Spec) (State, error) {
	if err := atomicfile.WriteJSON(specPath(spec.Dir), spec); err != nil {
		return State{}, fmt.Errorf("write monitor spec: %w", err)
	}
	dir, err := os.Open(spec.Dir)
	if err != nil {
		return State{}, fmt.Errorf("open monitor dir: %w", err)
	}
	defer dir.Close()
	logf, err := os.OpenFile(logPath(spec.Dir), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return State{}, fmt.Errorf("open monitor log: %w", err)
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return State{}, fmt.Errorf("monitor ready pipe: %w", err)
	}
	defer r.Close()
	bin := filepath.Dir(exe)
	cmd := exec.Command(filepath.Join(bin, BinaryName), filepath.Join(bin, HelperBinaryName), spec.Dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w, dir} // fd 3: readiness, fd 4: its directory
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return State{}, fmt.Errorf("start monitor: %w", err)
	}
	// The intermediate exits at once (it reports through the pipe, not its
	// status): reap it.
	go func() { _ = cmd.Wait() }()

	if dl, ok := ctx.Deadline(); ok {
		if err := r.SetReadDeadline(dl); err != nil {
			return State{}, fmt.Errorf("wait for monitor of pod %s: %w", spec.PodID, err)
		}
	}
	line, err := bufio.NewReader(r).ReadBytes('\n')
	if err != nil {
		return State{}, fmt.Errorf("wait for monitor of pod %s: %w (see %s)", spec.PodID, err, logPath(spec.Dir))
	}
	var msg ready
	if err := json.Unmarshal(line, &msg); err != nil {
		return State{}, fmt.Errorf("monitor readiness: %w", err)
	}
	if msg.Error != "" {
		return msg.State, fmt.Errorf("monitor of pod %s: %s", spec.PodID, msg.Error)
	}
	return msg.State, nil
}

// Shutdown stops the pod's monitor and everything it started. It asks the
// monitor first; when no monitor answers it kills the recorded processes
// itself. It is idempotent.
func Shutdown(ctx context.Context, dir string, grace time.Duration) error {
	if _, err := Call(ctx, SocketPath(dir), Request{Op: OpStop}); err == nil {
		return waitMonitorExit(dir, grace)
	}
	// No monitor answered (or it failed): kill what it recorded.
	var st State
	if rerr := atomicfile.ReadJSON(StatePath(dir), &st); rerr != nil {
		if errors.Is(rerr, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("read monitor state: %w", rerr)
	}
	return errors.Join(proc.KillRef(st.Pause, grace), proc.KillRef(st.Monitor, grace))
}

func waitMonitorExit(dir string, grace time.Duration) error {
	var st State
	if err := atomicfile.ReadJSON(StatePath(dir), &st); err != nil {
		return nil
	}
	h, err := proc.Open(st.Monitor)
	if err != nil {
		return nil
	}
	defer h.Close()
	if h.WaitExit(grace) {
		return nil
	}
	return h.Kill(grace)
}

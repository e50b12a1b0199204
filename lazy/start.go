package lazy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ServerCommand is how to run minicri-lazyfs: the program, arguments before
// the socket's, extra environment, and the file its output goes to.
type ServerCommand struct {
	Path string
	Args []string
	Env  []string
	Log  string
}

// StartServer makes sure a server answers on socket: the one already there,
// else a new one run from cmd in a session of its own, so that it outlives
// its starter (the daemon: killed, restarted, its process group signalled).
// It returns the server's pid once it answers.
func StartServer(ctx context.Context, socket string, cmd ServerCommand) (int, error) {
	c := Client{Socket: socket}
	if pid, _, err := c.List(ctx); err == nil {
		return pid, nil
	}
	logf, err := os.OpenFile(cmd.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("lazyfs start: %w", err)
	}
	defer logf.Close()
	p := exec.Command(cmd.Path, append(cmd.Args, "--socket", socket)...) //nolint:gosec // the server binary is the daemon's configuration
	p.Env = append(os.Environ(), cmd.Env...)
	p.Stdout, p.Stderr = logf, logf
	p.Dir = "/"
	p.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := p.Start(); err != nil {
		return 0, fmt.Errorf("lazyfs start: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.Wait() }() // reaped while the starter lives; its orphan after
	for {
		if pid, _, err := c.List(ctx); err == nil {
			return pid, nil
		}
		select {
		case err := <-exited:
			return 0, fmt.Errorf("lazyfs start: the server exited (%v); see %s", err, cmd.Log)
		case <-ctx.Done():
			return 0, fmt.Errorf("lazyfs start: no answer on %s: %w", socket, errors.Join(ctx.Err(), p.Process.Kill()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/internal/events"
	"github.com/minicri/minicri/internal/proc"
	"github.com/minicri/minicri/monitor"
	"github.com/minicri/minicri/ocirt"
)

// Start lets a created container run.
func (m *Manager) Start(ctx context.Context, id string) error {
	c, err := m.store.get(id)
	if err != nil {
		return err
	}
	if err := c.op.Acquire(ctx); err != nil {
		return fmt.Errorf("start container %s: %w", c.ID(), err)
	}
	defer c.op.Unlock()
	st := m.refresh(c)
	if c.removed || st.State != StateCreated {
		return fmt.Errorf("%w: container %s is %s, not created", ErrFailedPrecondition, c.ID(), st.State)
	}
	pod, err := m.opts.Pods.Pod(c.rec.PodID)
	if err != nil {
		return err
	}
	if m.opts.Hooks.Active() {
		if err := m.opts.Hooks.StartContainer(ctx, m.infoOf(c).Hook()); err != nil {
			return fmt.Errorf("start container %s: %w", c.ID(), err)
		}
	}
	var resp monitor.Response
	if c.rec.Restore != nil {
		resp, err = m.startRestored(ctx, c, pod) // restoring.go
	} else {
		resp, err = monitor.Call(ctx, monitor.SocketPath(pod.MonitorDir), monitor.Request{Op: monitor.OpStart, ID: c.ID()})
	}
	if err != nil {
		return fmt.Errorf("start container %s: %w", c.ID(), err)
	}
	_, err = c.update(func(s Status) Status {
		s.State, s.StartedAt = StateRunning, resp.Container.StartedAt
		return s
	})
	if err == nil {
		m.log.Info("container started", "pod", c.rec.PodID, "container", c.ID())
		if m.opts.Hooks.Active() {
			m.opts.Hooks.PostStartContainer(ctx, m.infoOf(c).Hook())
		}
	}
	return err
}

// Stop stops a container: its stop signal, then SIGKILL once timeout has
// passed. A stopped or unknown container is not an error.
func (m *Manager) Stop(ctx context.Context, id string, timeout time.Duration) error {
	return m.withContainer(ctx, id, func(c *Container) error { return m.stopLocked(ctx, c, timeout) })
}

// withContainer runs fn with the container's operation lock held; an
// unknown ID is not an error (Stop and Remove are idempotent). Waiting for
// the lock ends with ctx.
func (m *Manager) withContainer(ctx context.Context, id string, fn func(*Container) error) error {
	c, err := m.store.get(id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.op.Acquire(ctx); err != nil {
		return fmt.Errorf("container %s: %w", c.ID(), err)
	}
	defer c.op.Unlock()
	return fn(c)
}

func (m *Manager) stopLocked(ctx context.Context, c *Container, timeout time.Duration) error {
	st := m.refresh(c)
	if c.removed || (st.State != StateRunning && st.State != StateCreated) {
		return nil
	}
	if st.State == StateCreated && c.rec.Restore != nil {
		return m.stopUnrestored(c) // restoring.go
	}
	sig := m.stopSignal(c)
	pod, err := m.opts.Pods.Pod(c.rec.PodID)
	if err != nil {
		return err
	}
	resp, err := monitor.Call(ctx, monitor.SocketPath(pod.MonitorDir), monitor.Request{
		Op: monitor.OpKill, ID: c.ID(), Signal: int(sig), Timeout: timeout,
	})
	var exit *monitor.Exit
	switch {
	case err == nil:
		exit = resp.Container.Exit
	case errors.Is(err, monitor.ErrUnavailable):
		m.log.Warn("monitor unavailable; killing container directly", "pod", c.rec.PodID, "container", c.ID())
		if exit, err = m.killDirectly(c); err != nil {
			return err
		}
	default:
		return fmt.Errorf("stop container %s: %w", c.ID(), err)
	}
	if _, err := c.update(func(s Status) Status { return exited(s, exit) }); err != nil {
		return err
	}
	m.log.Info("container stopped", "pod", c.rec.PodID, "container", c.ID(), "exit_code", exit.Code)
	return nil
}

// stopSignal is the container's stop signal, else the image's, else SIGTERM.
func (m *Manager) stopSignal(c *Container) syscall.Signal {
	sig, bad := effectiveStopSignal(c.rec.Config.StopSignal, c.rec.ImageStopSignal)
	for _, name := range bad {
		m.log.Warn("ignoring unknown stop signal", "container", c.ID(), "signal", name)
	}
	return sig
}

// killDirectly kills a container whose monitor is gone, through its
// runtime's state, and waits for it.
func (m *Manager) killDirectly(c *Container) (*monitor.Exit, error) {
	h, err := m.loadOf(c)
	if err == nil {
		if err := h.Signal(syscall.SIGKILL, true); err != nil && !isNotRunning(err) {
			return nil, fmt.Errorf("kill container %s: %w", c.ID(), err)
		}
	}
	if h, err := proc.Open(c.Status().Init); err == nil {
		defer h.Close()
		if !h.WaitExit(10 * time.Second) {
			return nil, fmt.Errorf("container %s did not exit after SIGKILL", c.ID())
		}
	}
	return &monitor.Exit{Code: 128 + int(syscall.SIGKILL), FinishedAt: time.Now()}, nil
}

// exited is s moved to exited with the given exit.
func exited(s Status, e *monitor.Exit) Status {
	s.State, s.ExitCode, s.FinishedAt = StateExited, int32(e.Code), e.FinishedAt //nolint:gosec // an exit status: 0..255, or 128+signal
	switch {
	case e.OOMKilled:
		s.Reason = ReasonOOMKilled
	case e.Code == 0:
		s.Reason = ReasonCompleted
	default:
		s.Reason = ReasonError
	}
	return s
}

// refresh notices an exit the monitor recorded (or a monitor that died
// with its container) and publishes it.
func (m *Manager) refresh(c *Container) Status {
	st := c.Status()
	if st.State != StateRunning && st.State != StateCreated {
		return st
	}
	var exit monitor.Exit
	err := atomicfile.ReadJSON(monitor.ExitPath(m.ctrStateDir(c.ID())), &exit)
	if errors.Is(err, os.ErrNotExist) {
		if st.State != StateRunning || m.initAlive(st) || m.monitorAlive(c) {
			return st
		}
		// The init is gone and no monitor recorded how: its exit is lost.
		exit = monitor.Exit{Code: 255, FinishedAt: time.Now()}
		m.log.Warn("container exited while its monitor was gone; exit code unknown", "container", c.ID())
		return m.publishExit(c, func(s Status) Status {
			if s.State != StateRunning {
				return s
			}
			s = exited(s, &exit)
			s.Reason, s.Message = ReasonUnknown, "the pod's monitor died; the exit status is lost"
			return s
		})
	}
	if err != nil {
		m.log.Error("read container exit", "container", c.ID(), "err", err)
		return st
	}
	return m.publishExit(c, func(s Status) Status {
		if s.State != StateRunning && s.State != StateCreated {
			return s
		}
		return exited(s, &exit)
	})
}

// publishExit records an exit with fn (which leaves an ended status alone).
// When the record cannot be written (a full root), the exit is still what
// the caller gets: a read finds it again, from the monitor's exit.json or the
// dead init, until a later read writes the record.
func (m *Manager) publishExit(c *Container, fn func(Status) Status) Status {
	next, err := c.update(fn)
	if err != nil {
		m.log.Error("record container exit", "container", c.ID(), "err", err)
		return fn(next)
	}
	return next
}

func (m *Manager) initAlive(st Status) bool {
	h, err := proc.Open(st.Init)
	if err != nil {
		return false
	}
	defer h.Close()
	return h.Alive()
}

func (m *Manager) monitorAlive(c *Container) bool {
	pod, err := m.opts.Pods.Pod(c.rec.PodID)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = monitor.Call(ctx, monitor.SocketPath(pod.MonitorDir), monitor.Request{Op: monitor.OpStatus})
	return err == nil
}

func (m *Manager) info(c *Container) Info {
	rec := c.rec
	rec.Status = m.refresh(c)
	if rec.Status.Resources != nil {
		rec.Config.Resources = *rec.Status.Resources
	}
	return Info{Record: rec}
}

// Remove stops the container if needed and deletes it. Unknown IDs are fine.
func (m *Manager) Remove(ctx context.Context, id string) error {
	return m.withContainer(ctx, id, func(c *Container) error { return m.removeLocked(ctx, c) })
}

func (m *Manager) removeLocked(ctx context.Context, c *Container) error {
	if c.removed {
		return nil
	}
	if err := m.stopLocked(ctx, c, 0); err != nil {
		return err
	}
	if _, err := c.update(func(s Status) Status { s.State = StateRemoving; return s }); err != nil {
		return err
	}
	if err := m.release(ctx, c.rec); err != nil {
		return fmt.Errorf("remove container %s: %w", c.ID(), err)
	}
	c.removed = true
	if m.opts.Hooks.Active() {
		m.opts.Hooks.RemoveContainer(ctx, m.infoOf(c).Hook())
	}
	m.rates.Forget(c.ID())
	m.store.delete(c.ID())
	m.names.release(nameKey(c.rec.PodID, c.rec.Config), c.ID())
	m.events.Publish(events.Event{Kind: events.Deleted, ID: c.ID(), PodID: c.rec.PodID})
	m.log.Info("container removed", "pod", c.rec.PodID, "container", c.ID())
	return nil
}

// release frees everything a container holds. Each step is idempotent, so
// crash recovery can run it again.
func (m *Manager) release(ctx context.Context, rec Record) error {
	monitorDir := ""
	if pod, err := m.opts.Pods.Pod(rec.PodID); err == nil {
		monitorDir = pod.MonitorDir
	}
	if err := m.destroy(ctx, rec, monitorDir); err != nil {
		return err
	}
	if err := unmountRootfs(m.rootfsPath(rec.ID)); err != nil {
		return err
	}
	if err := m.releaseImageVolumes(rec); err != nil {
		return err
	}
	m.metrics.Forget(rec.ID)
	if rec.ImageID != "" {
		if err := m.opts.Images.Release(rec.ID); err != nil {
			m.log.Warn("release image", "container", rec.ID, "image", rec.ImageID, "err", err)
		}
	}
	return m.removeDirs(rec.ID)
}

// destroy removes the container's processes, cgroup and libcontainer state:
// through the monitor when it answers, else directly.
func (m *Manager) destroy(ctx context.Context, rec Record, monitorDir string) error {
	id := rec.ID
	if monitorDir != "" {
		_, err := monitor.Call(ctx, monitor.SocketPath(monitorDir), monitor.Request{Op: monitor.OpDelete, ID: id})
		if err == nil {
			return nil
		}
		if !errors.Is(err, monitor.ErrUnavailable) {
			return fmt.Errorf("delete container %s: %w", id, err)
		}
	}
	h, err := m.load(id, rec.RuntimeHandler, rec.CgroupsPath)
	if err != nil {
		if !errors.Is(err, ocirt.ErrNotExist) {
			m.log.Warn("cannot load the container's runtime state; nothing destroyed", "container", id, "err", err)
		}
		return nil // no runtime state: nothing to destroy
	}
	if err := h.Delete(); err != nil {
		return fmt.Errorf("destroy container %s: %w", id, err)
	}
	return nil
}

// StopPod kills every container of a pod (the pod is stopping).
func (m *Manager) StopPod(ctx context.Context, podID string) error {
	var errs []error
	for _, c := range m.store.all(podID) {
		if err := m.Stop(ctx, c.ID(), 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemovePod removes every container of a pod (the pod is being removed).
func (m *Manager) RemovePod(ctx context.Context, podID string) error {
	var errs []error
	for _, c := range m.store.all(podID) {
		if err := m.Remove(ctx, c.ID()); err != nil {
			errs = append(errs, err)
		}
	}
	m.rates.Forget(podRateKey(podID))
	return errors.Join(errs...)
}

// ReopenLog makes the monitor reopen the container's log file.
func (m *Manager) ReopenLog(ctx context.Context, id string) error {
	c, err := m.store.get(id)
	if err != nil {
		return err
	}
	if st := m.refresh(c); st.State != StateRunning {
		return fmt.Errorf("%w: container %s is not running", ErrFailedPrecondition, id)
	}
	pod, err := m.opts.Pods.Pod(c.rec.PodID)
	if err != nil {
		return err
	}
	_, err = monitor.Call(ctx, monitor.SocketPath(pod.MonitorDir), monitor.Request{Op: monitor.OpReopenLog, ID: c.ID()})
	return err
}

// BundleDir is where the container's OCI spec (config.json) lives.
func (m *Manager) BundleDir(id string) string { return m.ctrStateDir(id) }

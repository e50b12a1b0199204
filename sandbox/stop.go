package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/minicri/minicri/internal/events"
	"github.com/minicri/minicri/monitor"
	"github.com/minicri/minicri/network"
)

// stopGrace bounds waiting for a killed pause or monitor. The pause has
// nothing to save, so it gets SIGKILL at once.
const stopGrace = 10 * time.Second

// Stop stops the pod's processes, tears its network down and releases its
// namespaces and shm. It is idempotent; an unknown ID is not an error.
func (m *Manager) Stop(ctx context.Context, id string) error {
	return m.withSandbox(ctx, id, func(sb *Sandbox) error { return m.stopLocked(ctx, sb) })
}

// withSandbox runs fn with the sandbox's operation lock held; an unknown ID
// is not an error (Stop and Remove are idempotent). Waiting for the lock
// ends with ctx.
func (m *Manager) withSandbox(ctx context.Context, id string, fn func(*Sandbox) error) error {
	sb, err := m.store.get(id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := sb.op.Acquire(ctx); err != nil {
		return fmt.Errorf("sandbox %s: %w", sb.ID(), err)
	}
	defer sb.op.Unlock()
	return fn(sb)
}

func (m *Manager) stopLocked(ctx context.Context, sb *Sandbox) error {
	if st := sb.Status().State; sb.removed || st == StateNotReady || st == StateRemoving {
		return nil
	}
	if err := m.opts.Containers.StopPod(ctx, sb.ID()); err != nil {
		return fmt.Errorf("stop containers of sandbox %s: %w", sb.ID(), err)
	}
	if err := m.opts.Hooks.StopPod(ctx, sb.Info().Hook()); err != nil {
		m.log.Warn("NRI StopPodSandbox", "pod", sb.ID(), "err", err)
	}
	if err := m.releaseResources(ctx, sb.rec); err != nil {
		return fmt.Errorf("stop sandbox %s: %w", sb.ID(), err)
	}
	sb.setProcs()
	if err := sb.update(func(s Status) Status {
		s.State, s.StoppedAt = StateNotReady, time.Now()
		return s
	}); err != nil {
		return err
	}
	m.emit(events.Stopped, sb.ID())
	m.log.Info("pod sandbox stopped", "pod", sb.ID())
	return nil
}

// releaseResources undoes everything a running sandbox holds, in reverse
// order of creation. Every step is idempotent, so it also serves crash
// recovery, where any subset may already be gone.
func (m *Manager) releaseResources(ctx context.Context, rec Record) error {
	var errs []error
	stopped := monitor.Shutdown(ctx, m.podStateDir(rec.ID), stopGrace)
	if stopped != nil {
		errs = append(errs, fmt.Errorf("stop monitor: %w", stopped))
	}
	if rec.NetNSPath != "" {
		// With nothing left in the netns, dropping it first lets the kernel
		// free the veth asynchronously, which halves DEL where the plugins
		// do not need the netns to find their state.
		early := stopped == nil && !m.opts.Network.NetNSNeededForTeardown(rec.ID)
		if early {
			if err := removeNetNS(rec.NetNSPath); err != nil {
				errs = append(errs, err)
			}
		}
		if err := m.opts.Network.Teardown(ctx, rec.networkPod()); err != nil {
			errs = append(errs, fmt.Errorf("cni del: %w", err))
		}
		if !early {
			if err := removeNetNS(rec.NetNSPath); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := unmountShm(rec.ShmPath); err != nil {
		errs = append(errs, err)
	}
	if err := removeCgroup(rec.CgroupPath); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Remove stops the sandbox if needed and deletes everything it had. It is
// idempotent; an unknown ID is not an error.
func (m *Manager) Remove(ctx context.Context, id string) error {
	return m.withSandbox(ctx, id, func(sb *Sandbox) error { return m.removeLocked(ctx, sb) })
}

func (m *Manager) removeLocked(ctx context.Context, sb *Sandbox) error {
	if sb.removed {
		return nil
	}
	if sb.Status().State == StateReady {
		if err := m.stopLocked(ctx, sb); err != nil {
			return err
		}
	}
	if err := m.opts.Containers.RemovePod(ctx, sb.ID()); err != nil {
		return fmt.Errorf("remove containers of sandbox %s: %w", sb.ID(), err)
	}
	if err := m.opts.Hooks.RemovePod(ctx, sb.Info().Hook()); err != nil {
		m.log.Warn("NRI RemovePodSandbox", "pod", sb.ID(), "err", err)
	}
	if err := sb.update(func(s Status) Status { s.State = StateRemoving; return s }); err != nil {
		return err
	}
	if err := m.removeDirs(sb.ID()); err != nil {
		return fmt.Errorf("remove sandbox %s: %w", sb.ID(), err)
	}
	final := sb.Info()
	sb.removed = true
	m.store.delete(sb.ID())
	m.inflight.forget(sb.rec.Config.Metadata.key())
	m.opts.Events.Publish(events.Event{Kind: events.Deleted, ID: sb.ID(), PodID: sb.ID(), Final: final})
	m.log.Info("pod sandbox removed", "pod", sb.ID())
	return nil
}

// removeDirs deletes the pod's state and root directories, the record last.
func (m *Manager) removeDirs(id string) error {
	if err := os.RemoveAll(m.podStateDir(id)); err != nil {
		return fmt.Errorf("remove state dir: %w", err)
	}
	if err := os.RemoveAll(m.podRootDir(id)); err != nil {
		return fmt.Errorf("remove root dir: %w", err)
	}
	return nil
}

func removeNetNS(path string) error {
	if path == "" {
		return nil
	}
	if err := network.LoadNetNS(path).Remove(); err != nil {
		return fmt.Errorf("remove netns: %w", err)
	}
	return nil
}

package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer"

	"github.com/minicri/minicri/ocirt"
)

// PodArchive is one container's archive in a pod checkpoint.
type PodArchive struct {
	ID      string `json:"id"`      // the checkpointed container
	Name    string `json:"name"`    // its metadata name
	Archive string `json:"archive"` // the archive's file name in the checkpoint directory
}

// CheckpointPod writes one checkpoint archive (<id>.tar in dir) for each
// of the running containers ids of pod podID, as one consistent cut: the
// cgroups of all of them are frozen before the first is dumped and thawed
// (on success, error or timeout alike) once the last one is. On error no
// archive is left in dir.
func (m *Manager) CheckpointPod(ctx context.Context, podID string, ids []string, dir string, timeout time.Duration) (out []PodArchive, err error) {
	if timeout <= 0 {
		timeout = DefaultCheckpointTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cs, unlock, err := m.lockPodContainers(ctx, podID, ids)
	defer unlock()
	if err != nil {
		return nil, err
	}
	lcs := make([]*libcontainer.Container, 0, len(cs))
	for _, c := range cs {
		h, err := m.loadOf(c)
		if err != nil {
			return nil, fmt.Errorf("%w: container %s: load runtime state: %v", ErrFailedPrecondition, c.ID(), err)
		}
		lc, ok := ocirt.LibcontainerOf(h)
		if !ok {
			return nil, fmt.Errorf("%w: container %s: checkpoint is supported by the built-in runtime only", ErrFailedPrecondition, c.ID())
		}
		lcs = append(lcs, lc)
	}
	start := time.Now()
	defer func() { err = errors.Join(err, thawAll(lcs)) }()
	for _, lc := range lcs {
		if err := lc.Pause(); err != nil {
			return nil, fmt.Errorf("freeze container %s: %w", lc.ID(), err)
		}
	}
	frozen := time.Now()
	defer func() {
		if err != nil {
			for _, a := range out {
				_ = os.Remove(filepath.Join(dir, a.Archive))
			}
			out = nil
		}
	}()
	for _, c := range cs {
		a := PodArchive{ID: c.ID(), Name: c.rec.Config.Name, Archive: c.ID() + ".tar"}
		if err := m.checkpointInto(ctx, c, dir, a.Archive); err != nil {
			return out, err
		}
		out = append(out, a)
	}
	m.log.Info("pod checkpointed", "pod", podID, "containers", len(cs), "dir", dir,
		"frozen_for", time.Since(frozen).Round(time.Millisecond).String(), "took", time.Since(start).Round(time.Millisecond).String())
	return out, nil
}

// lockPodContainers takes the operation lock of every container ids names
// (each of pod podID, running, named once), in ID order so that two
// concurrent pod checkpoints cannot deadlock; unlock releases what was taken.
func (m *Manager) lockPodContainers(ctx context.Context, podID string, ids []string) ([]*Container, func(), error) {
	var locked []*Container
	unlock := func() {
		for _, c := range locked {
			c.op.Unlock()
		}
	}
	var cs []*Container
	seen := map[string]bool{}
	for _, id := range ids {
		c, err := m.store.get(id)
		if err != nil {
			return nil, unlock, err
		}
		if seen[c.ID()] {
			return nil, unlock, fmt.Errorf("%w: container %s named twice", ErrInvalid, c.ID())
		}
		seen[c.ID()] = true
		if c.rec.PodID != podID {
			return nil, unlock, fmt.Errorf("%w: container %s is not in pod %s", ErrInvalid, c.ID(), podID)
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b *Container) int { return strings.Compare(a.ID(), b.ID()) })
	for _, c := range cs {
		if err := c.op.Acquire(ctx); err != nil {
			return nil, unlock, fmt.Errorf("checkpoint container %s: %w", c.ID(), err)
		}
		locked = append(locked, c)
		if st := m.refresh(c); c.removed || st.State != StateRunning {
			return nil, unlock, fmt.Errorf("%w: container %s is %s, not running", ErrFailedPrecondition, c.ID(), st.State)
		}
	}
	return locked, unlock, nil
}

// checkpointInto dumps c (frozen) into dir/name.
func (m *Manager) checkpointInto(ctx context.Context, c *Container, dir, name string) error {
	tmp, err := os.MkdirTemp(dir, "."+name+".tmp-")
	if err != nil {
		return fmt.Errorf("checkpoint container %s: %w", c.ID(), err)
	}
	err = m.checkpointLocked(ctx, c, tmp, filepath.Join(dir, name), &commitGate{})
	return errors.Join(err, os.RemoveAll(tmp))
}

// thawAll resumes every container CheckpointPod froze.
func thawAll(lcs []*libcontainer.Container) error {
	var errs []error
	for _, lc := range lcs {
		if err := lc.Resume(); err != nil && !errors.Is(err, libcontainer.ErrNotPaused) {
			errs = append(errs, fmt.Errorf("thaw container %s: %w", lc.ID(), err))
		}
	}
	return errors.Join(errs...)
}

// thawLeftFrozen resumes a running container whose cgroup is frozen: minicri
// freezes containers only while it checkpoints them, so a frozen one at
// startup was left by a daemon that died mid-CheckpointPod (the CRI asks
// that a pod is never left frozen).
func (m *Manager) thawLeftFrozen(c *Container) {
	if c.Status().State != StateRunning {
		return
	}
	h, err := m.loadOf(c)
	if err != nil {
		return
	}
	lc, ok := ocirt.LibcontainerOf(h)
	if !ok {
		return
	}
	if st, err := lc.Status(); err != nil || st != libcontainer.Paused {
		return
	}
	if err := lc.Resume(); err != nil {
		m.log.Error("thaw container left frozen by a checkpoint", "pod", c.rec.PodID, "container", c.ID(), "err", err)
		return
	}
	m.log.Warn("container was left frozen by an interrupted checkpoint; thawed", "pod", c.rec.PodID, "container", c.ID())
}

package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/runc/libcontainer"

	"github.com/minicri/minicri/container"
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
func (cp *Checkpointer) CheckpointPod(ctx context.Context, podID string, ids []string, dir string, timeout time.Duration) (out []PodArchive, err error) {
	if timeout <= 0 {
		timeout = DefaultCheckpointTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cs, unlock, err := cp.containers.Hold(ctx, podID, ids)
	defer unlock()
	if err != nil {
		return nil, err
	}
	lcs := make([]*libcontainer.Container, 0, len(cs))
	for _, c := range cs {
		h, err := c.Runtime()
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
		a := PodArchive{ID: c.ID(), Name: c.Record().Config.Name, Archive: c.ID() + ".tar"}
		if err := cp.checkpointInto(ctx, c, dir, a.Archive); err != nil {
			return out, err
		}
		out = append(out, a)
	}
	cp.log.Info("pod checkpointed", "pod", podID, "containers", len(cs), "dir", dir,
		"frozen_for", time.Since(frozen).Round(time.Millisecond).String(), "took", time.Since(start).Round(time.Millisecond).String())
	return out, nil
}

// checkpointInto dumps c (frozen) into dir/name.
func (cp *Checkpointer) checkpointInto(ctx context.Context, c container.Checkpointable, dir, name string) error {
	tmp, err := os.MkdirTemp(dir, "."+name+".tmp-")
	if err != nil {
		return fmt.Errorf("checkpoint container %s: %w", c.ID(), err)
	}
	err = cp.checkpointLocked(ctx, c, tmp, filepath.Join(dir, name), &commitGate{})
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

// thawLeftFrozen resumes every running container whose cgroup is frozen:
// minicri freezes containers only while it checkpoints them, so a frozen
// one at startup was left by a daemon that died mid-CheckpointPod (the CRI
// asks that a pod is never left frozen).
func (cp *Checkpointer) thawLeftFrozen(ctx context.Context) {
	running := container.StateRunning
	for _, info := range cp.containers.List(container.Filter{State: &running}) {
		cs, unlock, err := cp.containers.Hold(ctx, "", []string{info.ID})
		if err == nil {
			cp.thawIfFrozen(cs[0])
		}
		unlock()
	}
}

// thawIfFrozen resumes c if its cgroup is frozen.
func (cp *Checkpointer) thawIfFrozen(c container.Checkpointable) {
	h, err := c.Runtime()
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
		cp.log.Error("thaw container left frozen by a checkpoint", "pod", c.Record().PodID, "container", c.ID(), "err", err)
		return
	}
	cp.log.Warn("container was left frozen by an interrupted checkpoint; thawed", "pod", c.Record().PodID, "container", c.ID())
}

package container

import (
	"context"
	"os"
	"time"

	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/monitor"
)

// recover loads the records a previous run left. Containers come back as
// they were (an exit recorded meanwhile is noticed on first read); records of
// crashed creations or removals are finished off; state without a record is
// released.
func (m *Manager) recover(ctx context.Context) error {
	known, err := atomicfile.ScanRecords(m.recordsDir(), recordFile, func(r *Record) string { return r.ID },
		func(id string, rec *Record) { m.recoverOne(ctx, *rec) },
		func(id string, err error) {
			m.log.Warn("container directory without a valid record; removing", "container", id, "err", err)
			m.releaseStray(ctx, id)
		})
	if err != nil {
		return err
	}
	strays, _ := os.ReadDir(m.stateDir())
	for _, e := range strays {
		if !known[e.Name()] {
			m.log.Warn("releasing state of unknown container", "container", e.Name())
			m.releaseStray(ctx, e.Name())
		}
	}
	return nil
}

// recoverOne brings back one recorded container, or finishes the crashed
// operation its record shows.
func (m *Manager) recoverOne(ctx context.Context, rec Record) {
	id := rec.ID
	switch rec.Status.State {
	case StateCreating, StateRemoving:
		m.log.Info("cleaning up container left by a crash", "container", id, "state", rec.Status.State)
		if err := m.release(ctx, rec); err != nil {
			m.log.Error("cleanup of crashed container failed", "container", id, "err", err)
		}
	default:
		if _, err := m.opts.Images.Acquire(rec.ImageID, id); err != nil {
			m.log.Warn("image of recovered container is gone", "container", id, "image", rec.ImageID, "err", err)
		}
		m.reacquireImageVolumes(rec)
		c := m.newContainer(rec)
		m.store.add(c)
		if err := m.names.reserve(nameKey(rec.PodID, rec.Config), id); err != nil {
			// Two records with one pod and name (state written by something
			// else, or a corrupt record): the first keeps the name, this one
			// stays listed and removable under its ID.
			m.log.Warn("recovered container's name is already taken", "container", id, "pod", rec.PodID, "err", err)
		}
		if rec.Status.State == StateCreated && rec.Restore == nil {
			m.adoptLostStart(ctx, c)
		}
		m.log.Info("recovered container", "container", id, "pod", rec.PodID, "state", m.refresh(c).State)
	}
}

// adoptLostStart records the start of a container recorded as created whose
// monitor started it: the previous run was killed between the monitor's
// answer and the record (a full root fails the record too, but the same
// run's next StartContainer mends that: the monitor answers a repeated
// start as the first). Without it the container would read created while
// it runs, until the client started it again.
func (m *Manager) adoptLostStart(ctx context.Context, c *Container) {
	pod, err := m.opts.Pods.Pod(c.rec.PodID)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := monitor.Call(ctx, monitor.SocketPath(pod.MonitorDir), monitor.Request{Op: monitor.OpInspect, ID: c.ID()})
	if err != nil || resp.Container == nil || resp.Container.StartedAt.IsZero() {
		return
	}
	if _, err := c.update(func(s Status) Status {
		s.State, s.StartedAt = StateRunning, resp.Container.StartedAt
		return s
	}); err != nil {
		m.log.Error("record the start a crash lost", "pod", c.rec.PodID, "container", c.ID(), "err", err)
		return
	}
	m.log.Info("container started before the crash; start recorded", "pod", c.rec.PodID, "container", c.ID())
}

// releaseStray frees what an unrecorded container may hold.
func (m *Manager) releaseStray(ctx context.Context, id string) {
	if err := m.destroy(ctx, Record{ID: id}, ""); err != nil {
		m.log.Error("destroy unknown container", "container", id, "err", err)
	}
	if err := unmountRootfs(m.rootfsPath(id)); err != nil {
		m.log.Error("unmount unknown container", "container", id, "err", err)
	}
	if err := m.removeDirs(id); err != nil {
		m.log.Error("remove unknown container", "container", id, "err", err)
	}
}

package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/monitor"
	"github.com/minicri/minicri/network"
)

// recover loads the records a previous run left. Ready and not-ready pods
// come back as they were, without touching their processes or namespaces;
// records of crashed creations or removals are finished off; state that has
// no record (a crash before the record was written) is released.
func (m *Manager) recover(ctx context.Context) error {
	known, err := atomicfile.ScanRecords(m.recordsDir(), recordFile, func(r *Record) string { return r.ID },
		func(id string, rec *Record) { m.recoverOne(ctx, *rec) },
		func(id string, err error) {
			m.log.Warn("sandbox directory without a valid record; removing", "pod", id, "err", err)
			m.releaseOrphan(ctx, id)
		})
	if err != nil {
		return err
	}
	m.releaseStrays(ctx, known)
	return nil
}

// recoverOne brings back one recorded sandbox untouched, or finishes the
// crashed operation its record shows.
func (m *Manager) recoverOne(ctx context.Context, rec Record) {
	id := rec.ID
	switch rec.Status.State {
	case StateCreating, StateRemoving:
		m.log.Info("cleaning up sandbox left by a crash", "pod", id, "state", rec.Status.State)
		if err := m.releaseResources(ctx, rec); err != nil {
			m.log.Error("cleanup of crashed sandbox failed; will retry at next start", "pod", id, "err", err)
			return
		}
		if err := m.removeDirs(id); err != nil {
			m.log.Error("cleanup of crashed sandbox failed", "pod", id, "err", err)
		}
	default:
		sb := newSandbox(rec, m.recordPath(id))
		if rec.Status.State == StateReady {
			if hs, err := openProcs(rec.Status); err == nil {
				sb.setProcs(hs...)
			} else {
				m.log.Warn("pause or monitor of ready sandbox is gone", "pod", id, "err", err)
			}
		}
		m.store.add(sb)
		m.log.Info("recovered sandbox", "pod", id, "state", sb.Info().Status.State)
	}
}

// releaseStrays removes state dirs and netns pins whose pod has no record.
func (m *Manager) releaseStrays(ctx context.Context, known map[string]bool) {
	for _, dir := range []string{m.stateDir(), m.netnsDir()} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if id := e.Name(); !known[id] {
				m.log.Warn("releasing state of unknown sandbox", "pod", id, "path", filepath.Join(dir, id))
				m.releaseOrphan(ctx, id)
			}
		}
	}
}

// releaseOrphan frees what an unrecorded pod may hold: its monitor and
// pause, its network (through the CNI cache), netns pin, shm and dirs.
func (m *Manager) releaseOrphan(ctx context.Context, id string) {
	err := errors.Join(
		monitor.Shutdown(ctx, m.podStateDir(id), stopGrace),
		m.opts.Network.Teardown(ctx, network.Pod{ID: id, NetNSPath: m.netnsPath(id)}),
		removeNetNS(m.netnsPath(id)),
		unmountShm(m.shmPath(id)),
		m.removeDirs(id),
	)
	if err != nil {
		m.log.Error("releasing unknown sandbox failed", "pod", id, "err", err)
	}
}

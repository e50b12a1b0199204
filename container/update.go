package container

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/opencontainers/runc/libcontainer/specconv"

	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/internal/cgdriver"
)

// UpdateResources changes a running or created container's cgroup limits
// live, then records them in its spec and record.
func (m *Manager) UpdateResources(ctx context.Context, id string, r Resources) error {
	c, err := m.store.get(id)
	if err != nil {
		return err
	}
	if err := c.op.Acquire(ctx); err != nil {
		return fmt.Errorf("update container %s: %w", c.ID(), err)
	}
	defer c.op.Unlock()
	if st := m.refresh(c); c.removed || (st.State != StateRunning && st.State != StateCreated) {
		return fmt.Errorf("%w: container %s is %s", ErrFailedPrecondition, id, st.State)
	}
	spec, err := m.loadSpec(c.ID())
	if err != nil {
		return err
	}
	res, err := buildResources(&r, spec.Linux.Resources.Devices)
	if err != nil {
		return err
	}
	spec.Linux.Resources = res
	if _, err := specconv.CreateCgroupConfig(&specconv.CreateOpts{
		CgroupName: c.ID(), Spec: spec, UseSystemdCgroup: cgdriver.IsSystemd(spec.Linux.CgroupsPath),
	}, nil); err != nil {
		return fmt.Errorf("%w: resources: %v", ErrInvalid, err)
	}
	h, err := m.loadOf(c)
	if err != nil {
		return fmt.Errorf("load container %s: %w", c.ID(), err)
	}
	if err := h.Update(spec); err != nil {
		return fmt.Errorf("update resources of %s: %w", c.ID(), err)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(m.BundleDir(c.ID()), "config.json"), data, 0o600); err != nil {
		return err
	}
	_, err = c.update(func(s Status) Status { s.Resources = &r; return s })
	m.log.Info("container resources updated", "container", c.ID())
	return err
}

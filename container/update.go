package container

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/internal/atomicfile"
)

// UpdateResources changes a running or created container's cgroup limits
// live, then records them in its spec and record. The hooks may change
// them on the way.
func (m *Manager) UpdateResources(ctx context.Context, id string, r Resources) error {
	return m.updateSpecResources(ctx, id, func(c *Container, spec *specs.Spec) error {
		res, err := buildResources(&r, spec.Linux.Resources.Devices)
		if err != nil {
			return err
		}
		if res, err = m.opts.Hooks.UpdateContainer(ctx, m.infoOf(c).Hook(), res); err != nil {
			return err
		}
		spec.Linux.Resources = res
		return nil
	}, &r)
}

// AdjustResources changes a container's cgroup limits as adjust edits them
// (an NRI plugin's unsolicited update); the CRI view of its resources is
// left as the kubelet last set it.
func (m *Manager) AdjustResources(ctx context.Context, id string, adjust func(*specs.LinuxResources) error) error {
	return m.updateSpecResources(ctx, id, func(_ *Container, spec *specs.Spec) error {
		if spec.Linux.Resources == nil {
			spec.Linux.Resources = &specs.LinuxResources{}
		}
		return adjust(spec.Linux.Resources)
	}, nil)
}

// updateSpecResources has edit change the resources of the container's
// spec, applies them live, then records the spec (and cri, when set).
func (m *Manager) updateSpecResources(ctx context.Context, id string, edit func(*Container, *specs.Spec) error, cri *Resources) error {
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
	if err := edit(c, spec); err != nil {
		return err
	}
	if err := m.applyResources(c, spec); err != nil {
		return err
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(m.BundleDir(c.ID()), "config.json"), data, 0o600); err != nil {
		return err
	}
	m.log.Info("container resources updated", "container", c.ID(), "by_nri", cri == nil)
	if cri == nil {
		// A plugin's own update: no PostUpdateContainer (the plugin may be
		// waiting for this inside one of its event handlers, which hold
		// NRI's event lock).
		return nil
	}
	if _, err = c.update(func(s Status) Status { s.Resources = cri; return s }); err != nil {
		return err
	}
	if m.opts.Hooks.Active() {
		m.opts.Hooks.PostUpdateContainer(ctx, m.infoOf(c).Hook())
	}
	return nil
}

// applyResources sets the spec's resources on the container's cgroup,
// through the container's runtime.
func (m *Manager) applyResources(c *Container, spec *specs.Spec) error {
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
	return nil
}

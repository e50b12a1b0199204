package container

import (
	"errors"
	"fmt"

	"github.com/minicri/minicri/monitor"
	"github.com/minicri/minicri/ocirt"
)

// Runtimes finds the OCI runtime binary of a RuntimeClass handler (nil for
// the built-in runtime, the handler "").
type Runtimes interface {
	Binary(handler string) (*ocirt.Binary, error)
}

// runtime is the OCI runtime of handler.
func (m *Manager) runtime(handler string) (ocirt.Runtime, error) {
	if handler == "" || m.opts.Runtimes == nil {
		if handler != "" {
			return nil, fmt.Errorf("%w: runtime handler %q: no handlers configured", ErrFailedPrecondition, handler)
		}
		return ocirt.Libcontainer{Root: m.runcRoot()}, nil
	}
	b, err := m.opts.Runtimes.Binary(handler)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFailedPrecondition, err)
	}
	if b == nil {
		return ocirt.Libcontainer{Root: m.runcRoot()}, nil
	}
	return b, nil
}

// monitorRuntime tells the monitor which runtime runs a container of handler.
func (m *Manager) monitorRuntime(handler string) (*monitor.RuntimeBinary, error) {
	rt, err := m.runtime(handler)
	if err != nil {
		return nil, err
	}
	if b, ok := rt.(*ocirt.Binary); ok {
		return &monitor.RuntimeBinary{Path: b.Path, Root: b.Root}, nil
	}
	return nil, nil
}

// load finds the runtime's container of a record.
func (m *Manager) load(id, handler, cgroupsPath string) (ocirt.Handle, error) {
	rt, err := m.runtime(handler)
	if err != nil {
		return nil, err
	}
	return rt.Load(id, cgroupsPath)
}

// loadOf is load for a container.
func (m *Manager) loadOf(c *Container) (ocirt.Handle, error) {
	return m.load(c.ID(), c.rec.RuntimeHandler, c.rec.CgroupsPath)
}

// isNotRunning tells a signal that found nothing to signal.
func isNotRunning(err error) bool { return errors.Is(err, ocirt.ErrNotRunning) }

package container

import (
	"errors"
	"fmt"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/cdi"
)

// CDI resolves Container Device Interface devices (cdi.Registry).
type CDI interface {
	// Inject edits spec for the named devices: device nodes and their
	// device cgroup rules, mounts, environment, hooks.
	Inject(spec *specs.Spec, names []string) error
	Close() error
}

// injectCDI adds to spec the CDI devices the container asks for: those of
// the CRI's cdi_devices, then those of its own cdi.k8s.io/ annotations (the
// older form, which the kubelet fills from device plugins; as containerd
// and CRI-O, the pod's annotations are never read). After BuildSpec, as
// containerd's WithCDI comes last: a device's environment overrides the
// request's. A malformed name is InvalidArgument; a device no spec on the
// node defines, or whose spec cannot be applied, FailedPrecondition (the
// node's state: the spec may appear later), naming the device.
func (m *Manager) injectCDI(spec *specs.Spec, cfg *Config) error {
	names, err := cdi.Requested(cfg.CDIDevices, cfg.Annotations)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return m.InjectCDIDevices(spec, names)
}

// InjectCDIDevices adds the named CDI devices to spec: the CRI's, and those
// an NRI plugin's adjustment names. Errors as injectCDI's.
func (m *Manager) InjectCDIDevices(spec *specs.Spec, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if m.opts.CDI == nil {
		return fmt.Errorf("%w: CDI devices %s requested but CDI is disabled ([cdi] enable = false)",
			ErrFailedPrecondition, strings.Join(names, ", "))
	}
	if err := m.opts.CDI.Inject(spec, names); err != nil {
		if errors.Is(err, cdi.ErrUnknownDevice) || errors.Is(err, cdi.ErrBadSpec) {
			return fmt.Errorf("%w: %w", ErrFailedPrecondition, err)
		}
		return err
	}
	return nil
}

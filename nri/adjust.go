package nri

import (
	"errors"
	"fmt"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/runtime-tools/generate"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// errUnsupported marks an adjustment minicri cannot honour.
var errUnsupported = errors.New("not supported by minicri")

// adjustSpec applies the plugins' combined adjustment to a container's spec
// before it is created: annotations, env, args, mounts, OCI hooks, devices,
// resources, rlimits, OOM score, I/O priority, scheduler, cgroup path,
// namespaces, sysctls, seccomp policy, memory policy, net devices and RDT
// as libcontainer applies them, then CDI devices through injectCDI (the
// container manager's CDI registry, as for the CRI's cdi_devices). What
// minicri cannot honour (block I/O or RDT classes, which name host-side
// configuration minicri has none of) fails the creation rather than being
// dropped.
func adjustSpec(spec *specs.Spec, adj *api.ContainerAdjustment, injectCDI func(*specs.Spec, []string) error) error {
	if adj == nil {
		return nil
	}
	if err := checkSupported(adj, injectCDI != nil); err != nil {
		return err
	}
	if spec.Process == nil {
		spec.Process = &specs.Process{}
	}
	if err := generate.SpecGenerator(specEditor{spec}).Adjust(adj); err != nil {
		return fmt.Errorf("nri adjustment: %w", err)
	}
	spec.Process.Rlimits = lastRlimits(spec.Process.Rlimits)
	if devs := adj.GetCDIDevices(); len(devs) > 0 {
		names := make([]string, len(devs))
		for i, d := range devs {
			names[i] = d.GetName()
		}
		if err := injectCDI(spec, names); err != nil {
			return fmt.Errorf("nri adjustment: %w", err)
		}
	}
	return nil
}

func checkSupported(adj *api.ContainerAdjustment, cdi bool) error {
	if len(adj.GetCDIDevices()) > 0 && !cdi {
		return fmt.Errorf("nri adjustment: CDI devices %v: %w", adj.GetCDIDevices(), errUnsupported)
	}
	r := adj.GetLinux().GetResources()
	if r.GetBlockioClass() != nil {
		return fmt.Errorf("nri adjustment: block I/O class %q: %w", r.GetBlockioClass().GetValue(), errUnsupported)
	}
	if r.GetRdtClass() != nil {
		return fmt.Errorf("nri adjustment: RDT class %q: %w", r.GetRdtClass().GetValue(), errUnsupported)
	}
	return nil
}

// lastRlimits keeps one limit per type, the last one given (the
// adjustment's over the container's own).
func lastRlimits(in []specs.POSIXRlimit) []specs.POSIXRlimit {
	if len(in) < 2 {
		return in
	}
	idx := map[string]int{}
	var out []specs.POSIXRlimit
	for _, l := range in {
		if i, ok := idx[l.Type]; ok {
			out[i] = l
			continue
		}
		idx[l.Type] = len(out)
		out = append(out, l)
	}
	return out
}

// mergeResources applies a plugin's update over the container's current
// resources: what the update sets replaces, the rest stays.
func mergeResources(cur *specs.LinuxResources, upd *api.LinuxResources) error {
	if upd == nil {
		return nil
	}
	if upd.GetBlockioClass() != nil || upd.GetRdtClass() != nil {
		return fmt.Errorf("nri update: block I/O or RDT class: %w", errUnsupported)
	}
	spec := &specs.Spec{Linux: &specs.Linux{Resources: cur}}
	if err := generate.SpecGenerator(specEditor{spec}).AdjustResources(upd); err != nil {
		return fmt.Errorf("nri update: %w", err)
	}
	return nil
}

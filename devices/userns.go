package devices

import specs "github.com/opencontainers/runtime-spec/specs-go"

// BindMoved makes each device whose container path is not its host
// path (moved: container path -> host path) a bind mount of the host's
// node, in a container with its own user namespace. There libcontainer
// cannot mknod: it bind-mounts the host's file at the device's *container*
// path instead, which the request chooses (a block volume's devicePath):
// another device, or any host file the pod's user namespace can reach by
// path. The device cgroup rule stays. Package cdi does the same for CDI
// device nodes.
func BindMoved(devs []specs.LinuxDevice, moved map[string]string, mounts []specs.Mount) ([]specs.LinuxDevice, []specs.Mount) {
	if len(moved) == 0 {
		return devs, mounts
	}
	kept := devs[:0:0]
	for _, d := range devs {
		host, ok := moved[d.Path]
		if !ok {
			kept = append(kept, d)
			continue
		}
		mounts = append(mounts, specs.Mount{
			Destination: d.Path, Source: host, Type: "bind",
			Options: []string{"bind", "nosuid", "noexec"},
		})
	}
	return kept, mounts
}

package cdi

import (
	"slices"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// bindMovedNodes makes the device nodes whose host path differs from
// their container path bind mounts of the host path, in a container with
// its own user namespace. There libcontainer cannot mknod: it bind-mounts
// the host's node at the *container* path instead, which is another
// file or none. The device cgroup rule CDI added stays.
func bindMovedNodes(spec *oci.Spec, nodes []*specs.DeviceNode) {
	if spec.Linux == nil || !slices.ContainsFunc(spec.Linux.Namespaces, func(ns oci.LinuxNamespace) bool {
		return ns.Type == oci.UserNamespace
	}) {
		return
	}
	for _, n := range nodes {
		if n == nil || n.HostPath == "" || n.HostPath == n.Path {
			continue
		}
		spec.Linux.Devices = slices.DeleteFunc(spec.Linux.Devices, func(d oci.LinuxDevice) bool { return d.Path == n.Path })
		spec.Mounts = append(spec.Mounts, oci.Mount{
			Destination: n.Path, Source: n.HostPath, Type: "bind",
			Options: []string{"bind", "nosuid", "noexec"},
		})
	}
}

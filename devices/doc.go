// Package devices turns a container's CRI devices into its OCI spec's
// device nodes and device cgroup rules, as containerd's CRI plugin does: a
// device node or every node under a directory, at the request's container
// path, a privileged container's host devices and its allow-all rule; and,
// in a pod with its own user namespace, where libcontainer cannot mknod, a
// bind mount of the host's node for each device found at another path.
//
// Errors a request causes wrap errdefs.ErrInvalid (container.ErrInvalid).
//
// Imports: the standard library, x/sys/unix, the OCI runtime-spec and, of
// the project, only internal/errdefs. It must never import container/
// (which hands it the request's devices) or another domain package, the CRI
// edge (server, streaming, daemon) or gRPC.
package devices

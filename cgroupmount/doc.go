// Package cgroupmount decides how a container sees cgroups: whether it gets
// a cgroup namespace of its own, whether its /sys/fs/cgroup is read-only or
// writable and with which options, from the CRI's cgroup_mount_mode and
// cgroupns_options (cri-api v0.38), the container's privilege and the host
// (cgroup v1 or v2, nsdelegate); and it delegates a container's cgroup to
// the container's root (Delegate) when that cgroup is writable.
//
// It is a room of its own, not a file of container/, because the decision
// is a table of its own (mode x privilege x namespace x host) best tested
// alone, and container/ is kept under its size budget (test/layout).
//
// Errors a request causes wrap errdefs.ErrInvalid, those the node's state
// causes errdefs.ErrFailedPrecondition (container.ErrInvalid and
// ErrFailedPrecondition).
//
// Imports: the standard library, moby/sys/mountinfo, x/sys/unix and, of the
// project, only internal/errdefs. It must never import container/ (which
// hands it the request's fields) or another domain package, the CRI edge
// (server, streaming, daemon) or gRPC.
package cgroupmount

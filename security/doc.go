// Package security builds what confines a container's process, as
// containerd's CRI plugin does: its capabilities (bounding, effective,
// permitted, ambient) from the request and what minicri holds, the masked
// and read-only paths, the seccomp filter (moby's default profile, or a
// Localhost one in Docker or OCI format) and the AppArmor profile (the
// host's default, or a Localhost one the kernel has loaded); and the
// seccomp or AppArmor profile a request chooses (Profile).
//
// Errors a request causes wrap errdefs.ErrInvalid, those the node's state
// causes errdefs.ErrFailedPrecondition (container.ErrInvalid and
// ErrFailedPrecondition).
//
// Imports: the standard library, moby/sys/capability, moby/profiles, the
// OCI runtime-spec and, of the project, only internal/errdefs; the host's
// AppArmor comes in through the AppArmor interface (package apparmor
// implements it). It must never import container/ (which hands it the
// request's fields) or another domain package, the CRI edge (server,
// streaming, daemon) or gRPC.
package security

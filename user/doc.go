// Package user resolves the identity a container's process runs with:
// uid, gid and supplementary groups from the CRI's run_as_user,
// run_as_group, run_as_username, supplemental_groups and their policy, and
// the image's USER, looking names and memberships up in the image's
// /etc/passwd and /etc/group inside its rootfs (symlinks resolved within
// it, sizes capped, ids range-checked against a hostile image), as
// containerd's CRI plugin does.
//
// Errors a request causes wrap errdefs.ErrInvalid (container.ErrInvalid).
//
// Imports: the standard library, moby/sys/user, filepath-securejoin, the
// OCI runtime-spec and, of the project, only internal/errdefs. It must
// never import container/ (which builds its Request) or another domain
// package, the CRI edge (server, streaming, daemon) or gRPC.
package user

// Package imagevolume mounts a container's image volumes (KEP-4639): for
// each, the image is pinned for a holder, its layers (seen through the
// pod's user namespace, idmapped, when it has one) are mounted read-only,
// nosuid and nodev as an overlay under the container's state directory,
// and its sub path is resolved inside it; and it unmounts them again
// without a record, so crash recovery can run it.
//
// container/ checks the request's image mounts, records the volumes and
// binds them into the container. Errors a request causes wrap
// errdefs.ErrInvalid (container.ErrInvalid).
//
// Imports: the standard library, x/sys/unix and, of the project, image (its
// Image) and internal/ helpers. It must never import container/ or another
// domain package, the CRI edge (server, streaming, daemon) or gRPC.
package imagevolume

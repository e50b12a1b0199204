// Package secprofile is the node's store of security profiles pulled from
// registries (KEP-6061: PullSecurityProfile, ListSecurityProfiles,
// RemoveSecurityProfile). A profile is an OCI artifact: one manifest whose
// config (or artifactType) says "seccomp profile", with exactly one layer
// that is the profile itself as OCI runtime-spec seccomp JSON. The store
// is separate from images (a profile never shows in ListImages),
// content-addressed by the layer's digest, persisted under the root
// directory (the profile's bytes and a record of its digest, the manifest
// digests and refs that resolved to it, its size), written temp-then-
// rename so that an error or a crash leaves nothing half-written.
//
// The pull goes through the image store's registry access
// (image.Store.FetchSmallArtifact: hosts.toml mirrors, credentials, TLS,
// token realms); a profile already present answers from the store with no
// registry request. Lookup resolves a container's or a pod's oci_ref for
// container/ and sandbox/: it never pulls.
//
// Errors carry the CRI's well-known messages as their prefix:
// ErrInvalid ("SecurityProfileInvalid", a permanent refusal),
// ErrRegistryUnavailable ("RegistryUnavailable"); ErrNotPresent wraps
// errdefs.ErrFailedPrecondition. server/errors.go maps them to gRPC codes.
//
// Imports: the standard library, runc's seccomp tables, the runtime spec
// and, of the project, image (its registry access) and internal/ helpers.
// It never imports container/, sandbox/ or another domain package, the CRI
// edge (server, streaming, daemon) or gRPC.
package secprofile

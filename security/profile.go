package security

import specs "github.com/opencontainers/runtime-spec/specs-go"

// ProfileType selects a seccomp or AppArmor profile.
type ProfileType int

// The CRI's SecurityProfile types.
const (
	ProfileRuntimeDefault ProfileType = iota
	ProfileUnconfined
	ProfileLocalhost
	// ProfileUnspecified: the request names no profile (AppArmor only; the
	// CRI's seccomp default is unconfined): the runtime's default applies.
	ProfileUnspecified
	// ProfileOCI: a seccomp profile pulled from a registry with
	// PullSecurityProfile (KEP-6061), named by Ref and intersected with its
	// base (Path set: that Localhost profile; empty: the runtime default).
	// It is never pulled when it is not present: the create fails.
	ProfileOCI
)

// Profile is a seccomp or AppArmor profile choice.
type Profile struct {
	Type ProfileType `json:"type"`
	Path string      `json:"path,omitempty"` // ProfileLocalhost: the profile file (seccomp) or name (AppArmor); ProfileOCI: its Localhost base
	Ref  string      `json:"ref,omitempty"`  // ProfileOCI: the digest-pinned reference it was pulled by
	// Digest and OCI are the pulled profile ProfileOCI resolved to when the
	// container was created (its store's digest, its filter): kept in the
	// container's record, so that a restart or recovery needs no store and
	// a RemoveSecurityProfile changes no container.
	Digest string              `json:"digest,omitempty"`
	OCI    *specs.LinuxSeccomp `json:"oci,omitempty"`
}

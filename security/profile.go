package security

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
)

// Profile is a seccomp or AppArmor profile choice.
type Profile struct {
	Type ProfileType `json:"type"`
	Path string      `json:"path,omitempty"` // ProfileLocalhost: the profile file (seccomp) or name (AppArmor)
}

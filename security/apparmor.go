package security

import (
	"fmt"
	"strings"

	"github.com/minicri/minicri/internal/errdefs"
)

// AppArmor is the host's AppArmor as containers see it
// (apparmor.Host).
type AppArmor interface {
	// Enabled reports whether the kernel enforces AppArmor.
	Enabled() bool
	// DefaultProfile returns minicri's default profile, loaded.
	DefaultProfile() (string, error)
	// Loaded reports whether the kernel has a profile of that name.
	Loaded(name string) (bool, error)
}

// AppArmorProfile chooses the container's AppArmor profile as containerd's
// GenerateApparmorSpecOpts does; "" means unconfined. libcontainer applies
// it to the container's init and to every process exec'd into it.
//
//   - no AppArmor on the host: nothing; a Localhost profile, which cannot
//     be loaded, is refused. (containerd refuses RuntimeDefault too; here
//     the host's default is no profile, as CRI-O has it, and the zero
//     Profile, which reads RuntimeDefault, keeps working on such hosts.
//     The kubelet itself refuses pods asking for AppArmor there.)
//   - nothing asked: RuntimeDefault (kubernetes#51746);
//   - RuntimeDefault: minicri's default profile, none when privileged;
//   - Localhost: the named profile (privileged or not), which the kernel
//     must have loaded;
//   - Unconfined: none.
func AppArmorProfile(p Profile, privileged bool, host AppArmor) (string, error) {
	if host == nil || !host.Enabled() {
		if p.Type == ProfileLocalhost {
			return "", fmt.Errorf("%w: AppArmor profile %q is not loaded: AppArmor is not enabled on this host", errdefs.ErrFailedPrecondition, p.Path)
		}
		return "", nil
	}
	if p.Type != ProfileLocalhost && p.Path != "" {
		return "", fmt.Errorf("%w: apparmor config invalid: a localhost ref must only be set for a Localhost profile", errdefs.ErrInvalid)
	}
	switch p.Type {
	case ProfileUnconfined:
		return "", nil
	case ProfileUnspecified, ProfileRuntimeDefault:
		if privileged {
			return "", nil
		}
		name, err := host.DefaultProfile()
		if err != nil {
			return "", fmt.Errorf("%w: the RuntimeDefault AppArmor profile is not available: %v", errdefs.ErrFailedPrecondition, err)
		}
		return name, nil
	case ProfileLocalhost:
		return localhostAppArmor(p.Path, host)
	default:
		return "", fmt.Errorf("%w: unknown AppArmor profile type %d", errdefs.ErrInvalid, p.Type)
	}
}

// localhostAppArmor checks that the kernel has the named profile: a
// container asking for one that is not loaded is refused, not run
// unconfined (libcontainer would fail later, less clearly).
func localhostAppArmor(ref string, host AppArmor) (string, error) {
	name := strings.TrimPrefix(ref, "localhost/")
	if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("%w: invalid AppArmor localhost profile name %q", errdefs.ErrInvalid, ref)
	}
	ok, err := host.Loaded(name)
	if err != nil {
		return "", fmt.Errorf("look up AppArmor profile %q: %w", name, err)
	}
	if !ok {
		return "", fmt.Errorf("%w: AppArmor profile %q is not loaded", errdefs.ErrFailedPrecondition, name)
	}
	return name, nil
}

package security

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/internal/errdefs"
)

// Seccomp mirrors containerd's sputil.GenerateSeccompSpecOpts. spec
// must already hold the final capability set: rules of the default
// profile (and of Docker-format Localhost profiles) that are gated on a
// capability are kept only when the bounding set has it.
//
//   - privileged: no seccomp, whatever was asked;
//   - Unconfined: no seccomp;
//   - RuntimeDefault: moby's default profile (github.com/moby/profiles);
//   - Localhost: the JSON file at Path, in Docker/moby format or OCI
//     format (moby's loader accepts both; containerd reads OCI only).
func Seccomp(p Profile, privileged bool, spec *specs.Spec) (*specs.LinuxSeccomp, error) {
	if privileged {
		return nil, nil
	}
	if p.Type != ProfileLocalhost && p.Type != ProfileOCI && p.Path != "" {
		return nil, fmt.Errorf("%w: seccomp config invalid: a profile path must only be set for a Localhost profile", errdefs.ErrInvalid)
	}
	switch p.Type {
	case ProfileUnconfined:
		return nil, nil
	case ProfileRuntimeDefault:
		sc, err := seccomp.GetDefaultProfile(spec)
		if err != nil {
			return nil, fmt.Errorf("build the default seccomp profile: %w", err)
		}
		return sc, nil
	case ProfileLocalhost:
		path := strings.TrimPrefix(p.Path, "localhost/")
		if path == "" || !filepath.IsAbs(path) {
			return nil, fmt.Errorf("%w: seccomp localhost profile %q is not an absolute path", errdefs.ErrInvalid, p.Path)
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w: failed to load seccomp profile %q: %w", errdefs.ErrInvalid, path, err)
		}
		sc, err := seccomp.LoadProfile(string(body), spec)
		if err != nil {
			return nil, fmt.Errorf("%w: failed to load seccomp profile %q: %w", errdefs.ErrInvalid, path, err)
		}
		return sc, nil
	case ProfileOCI:
		return nil, fmt.Errorf("%w: seccomp profile %s is not present (PullSecurityProfile pulls it; a create never does)", errdefs.ErrFailedPrecondition, p.Ref)
	default:
		return nil, fmt.Errorf("%w: unknown seccomp profile type %d", errdefs.ErrInvalid, p.Type)
	}
}

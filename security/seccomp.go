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
//     format (moby's loader accepts both; containerd reads OCI only);
//   - OCI: the pulled profile (OCI, resolved by the caller) intersected
//     with its base, Localhost (Path) or RuntimeDefault (Intersect).
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
		return localhostSeccomp(p.Path, spec)
	case ProfileOCI:
		return seccompOCI(p, spec)
	default:
		return nil, fmt.Errorf("%w: unknown seccomp profile type %d", errdefs.ErrInvalid, p.Type)
	}
}

// localhostSeccomp loads the Localhost profile at path.
func localhostSeccomp(path string, spec *specs.Spec) (*specs.LinuxSeccomp, error) {
	orig := path
	path = strings.TrimPrefix(path, "localhost/")
	if path == "" || !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w: seccomp localhost profile %q is not an absolute path", errdefs.ErrInvalid, orig)
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
}

// seccompOCI is a pulled profile on its base: never pulled here; one the
// caller did not resolve is not present.
func seccompOCI(p Profile, spec *specs.Spec) (*specs.LinuxSeccomp, error) {
	if p.OCI == nil {
		return nil, fmt.Errorf("%w: seccomp profile %s is not present (PullSecurityProfile pulls it; a create never does)", errdefs.ErrFailedPrecondition, p.Ref)
	}
	var base *specs.LinuxSeccomp
	var err error
	if p.Path != "" {
		base, err = localhostSeccomp(p.Path, spec)
	} else {
		base, err = seccomp.GetDefaultProfile(spec)
	}
	if err != nil {
		return nil, fmt.Errorf("base of seccomp profile %s: %w", p.Ref, err)
	}
	if base == nil { // a base profile that confines nothing
		base = &specs.LinuxSeccomp{DefaultAction: specs.ActAllow}
	}
	sc, err := Intersect(p.OCI, base)
	if err != nil {
		return nil, fmt.Errorf("seccomp profile %s on its base: %w", p.Ref, err)
	}
	return sc, nil
}

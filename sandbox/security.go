package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/internal/idmap"
)

// SeccompType is the kind of the pod-level seccomp profile.
type SeccompType int

// The CRI's SecurityProfile types, as the pod asks them (unset: Unconfined).
const (
	SeccompUnconfined SeccompType = iota
	SeccompRuntimeDefault
	SeccompLocalhost
	// SeccompOCI: a profile pulled with PullSecurityProfile (Ref), on the
	// base Path names (empty: the runtime default).
	SeccompOCI
)

// SeccompProfile is the pod-level seccomp profile.
type SeccompProfile struct {
	Type SeccompType `json:"type"`
	Path string      `json:"path,omitempty"` // SeccompLocalhost: the profile file; SeccompOCI: its Localhost base
	Ref  string      `json:"ref,omitempty"`  // SeccompOCI: the digest-pinned reference
	// Digest is the pulled profile Ref resolved to at RunPodSandbox
	// (recorded: the pause keeps its own filter, so only the check needs it).
	Digest string `json:"digest,omitempty"`
}

// OCIProfiles resolves the oci_ref of a seccomp profile pulled with
// PullSecurityProfile (secprofile.Store, wired by the daemon); it never
// pulls. Its "not present" error wraps errdefs.ErrFailedPrecondition.
type OCIProfiles interface {
	Lookup(ref string) (digest string, profile *specs.LinuxSeccomp, err error)
}

// resolveSeccompOCI finds the pulled profile a pod's OCI seccomp profile
// names, or fails the RunPodSandbox (never pulling it).
func (m *Manager) resolveSeccompOCI(p *SeccompProfile) error {
	if p.Type != SeccompOCI {
		p.Digest = ""
		return nil
	}
	if m.opts.OCIProfiles == nil {
		return fmt.Errorf("%w: pod seccomp profile %s is not present (no profile store)", ErrFailedPrecondition, p.Ref)
	}
	digest, _, err := m.opts.OCIProfiles.Lookup(p.Ref)
	if err != nil {
		return fmt.Errorf("pod seccomp profile: %w", err)
	}
	p.Digest = digest
	return nil
}

// Security is what the pod's LinuxSandboxSecurityContext asks of its pause
// (privileged and the namespaces are in Config).
//
//   - RunAsUser, RunAsGroup and SupplementalGroups are the pause's IDs
//     (default: the pause image's 65535, no groups);
//   - ReadonlyRootfs is moot: the pause's root is always an empty,
//     read-only tmpfs;
//   - Seccomp is checked (a Localhost profile must load) and recorded, but
//     the pause keeps its own filter, which allows only its reaping loop
//     and is stricter than any profile the pod may ask for.
type Security struct {
	RunAsUser          *int64         `json:"run_as_user,omitempty"`
	RunAsGroup         *int64         `json:"run_as_group,omitempty"`
	SupplementalGroups []int64        `json:"supplemental_groups,omitempty"`
	ReadonlyRootfs     bool           `json:"readonly_rootfs,omitempty"`
	Seccomp            SeccompProfile `json:"seccomp"`
}

// maxID is the highest UID or GID the pause takes (Kubernetes' limit too);
// maxGroups is the kernel's NGROUPS_MAX.
const (
	maxID     = 1<<31 - 1
	maxGroups = 65536
)

// validateSecurity refuses IDs the pause cannot take (out of range, or not
// mapped in the pod's own user namespace, where setresuid would fail long
// after the request was accepted) and a Localhost seccomp profile that
// does not load, as containerd does when it builds the sandbox's spec.
func validateSecurity(cfg *Config) error {
	sec := &cfg.Security
	var uids, gids []idmap.Mapping
	if ns := cfg.Namespaces; ns.OwnUserNS() {
		uids, gids = ns.UserNS.UIDs, ns.UserNS.GIDs
	}
	if sec.RunAsUser != nil {
		if err := checkID("run_as_user", *sec.RunAsUser, uids); err != nil {
			return err
		}
	}
	if sec.RunAsGroup != nil {
		if err := checkID("run_as_group", *sec.RunAsGroup, gids); err != nil {
			return err
		}
	}
	if len(sec.SupplementalGroups) > maxGroups {
		return fmt.Errorf("%w: %d pod supplemental groups, at most %d", ErrInvalid, len(sec.SupplementalGroups), maxGroups)
	}
	for _, g := range sec.SupplementalGroups {
		if err := checkID("supplemental group", g, gids); err != nil {
			return err
		}
	}
	return checkSeccomp(sec.Seccomp)
}

// checkID checks one ID; mapped, when set, are the pod's user namespace's
// mappings the ID must be in.
func checkID(what string, id int64, mapped []idmap.Mapping) error {
	if id < 0 || id > maxID {
		return fmt.Errorf("%w: pod %s %d is out of range", ErrInvalid, what, id)
	}
	if mapped != nil && !idmap.Mapped(mapped, uint32(id)) {
		return fmt.Errorf("%w: pod %s %d is not mapped in the pod's user namespace", ErrInvalid, what, id)
	}
	return nil
}

// checkSeccomp loads a Localhost profile (or an OCI profile's Localhost
// base) as the container path does; an OCI profile must be resolved.
func checkSeccomp(p SeccompProfile) error {
	switch p.Type {
	case SeccompUnconfined, SeccompRuntimeDefault:
		if p.Path != "" {
			return fmt.Errorf("%w: pod seccomp: a profile path must only be set for a Localhost profile", ErrInvalid)
		}
		return nil
	case SeccompLocalhost:
	case SeccompOCI:
		if p.Digest == "" {
			return fmt.Errorf("%w: pod seccomp profile %s is not present (PullSecurityProfile pulls it; RunPodSandbox never does)", ErrFailedPrecondition, p.Ref)
		}
		if p.Path == "" { // on the runtime default
			return nil
		}
	default:
		return fmt.Errorf("%w: unknown pod seccomp profile type %d", ErrInvalid, p.Type)
	}
	path := strings.TrimPrefix(p.Path, "localhost/")
	if path == "" || !filepath.IsAbs(path) {
		return fmt.Errorf("%w: pod seccomp localhost profile %q is not an absolute path", ErrInvalid, p.Path)
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: failed to load pod seccomp profile %q: %w", ErrInvalid, path, err)
	}
	spec := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}}
	if _, err := seccomp.LoadProfile(string(body), spec); err != nil {
		return fmt.Errorf("%w: failed to load pod seccomp profile %q: %w", ErrInvalid, path, err)
	}
	return nil
}

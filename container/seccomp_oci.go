package container

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// OCIProfiles resolves the oci_ref of a seccomp profile pulled with
// PullSecurityProfile (secprofile.Store, wired by the daemon) to its
// digest and filter; it never pulls. Its "not present" error wraps
// ErrFailedPrecondition.
type OCIProfiles interface {
	Lookup(ref string) (digest string, profile *specs.LinuxSeccomp, err error)
}

// resolveSeccompOCI records, in the container's config, the pulled
// profile an OCI seccomp profile names (KEP-6061): the container keeps it
// through restarts and recovery, whatever the store does later.
func (m *Manager) resolveSeccompOCI(p *Profile) error {
	if p.Type != ProfileOCI {
		p.Digest, p.OCI = "", nil // only a lookup fills them in
		return nil
	}
	if m.opts.OCIProfiles == nil {
		return fmt.Errorf("%w: seccomp profile %s is not present (no profile store)", ErrFailedPrecondition, p.Ref)
	}
	digest, sc, err := m.opts.OCIProfiles.Lookup(p.Ref)
	if err != nil {
		return fmt.Errorf("seccomp profile: %w", err)
	}
	p.Digest, p.OCI = digest, sc
	return nil
}

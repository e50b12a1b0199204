package server

import (
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
)

// checkSeccompProfile applies the CRI's rules on a seccomp SecurityProfile
// that the domain's Profile cannot carry: oci_ref is set if and only if the
// type is OCI, base_profile only with OCI, and a base's localhost_ref if and
// only if the base is Localhost. field names the request field.
func checkSeccompProfile(field string, p *runtimeapi.SecurityProfile) error {
	if p == nil {
		return nil
	}
	if p.GetProfileType() != runtimeapi.SecurityProfile_OCI {
		if p.GetOciRef() != "" || p.GetBaseProfile() != nil {
			return invalid(field + ": oci_ref and base_profile must only be set for an OCI profile")
		}
		return nil
	}
	if p.GetOciRef() == "" {
		return invalid(field + ": an OCI profile needs oci_ref")
	}
	if p.GetLocalhostRef() != "" {
		return invalid(field + ": localhost_ref must only be set for a Localhost profile (an OCI profile's Localhost base goes in base_profile)")
	}
	b := p.GetBaseProfile()
	if (b.GetType() == runtimeapi.SecurityProfileBase_Localhost) != (b.GetLocalhostRef() != "") {
		return invalid(field + ".base_profile: localhost_ref must be set if and only if the base is Localhost")
	}
	return nil
}

// checkAppArmorProfile: OCI profiles are seccomp only (KEP-6061).
func checkAppArmorProfile(field string, p *runtimeapi.SecurityProfile) error {
	if p.GetProfileType() == runtimeapi.SecurityProfile_OCI || p.GetOciRef() != "" || p.GetBaseProfile() != nil {
		return invalid(field + ": an OCI profile (oci_ref, base_profile) is for seccomp only, not AppArmor")
	}
	return nil
}

// checkContainerProfiles checks a container's seccomp and AppArmor profiles.
func checkContainerProfiles(sc *runtimeapi.LinuxContainerSecurityContext) error {
	if err := checkSeccompProfile("seccomp", sc.GetSeccomp()); err != nil {
		return err
	}
	return checkAppArmorProfile("apparmor", sc.GetApparmor())
}

// checkSandboxProfiles checks a pod's seccomp and AppArmor profiles.
func checkSandboxProfiles(sc *runtimeapi.LinuxSandboxSecurityContext) error {
	if err := checkSeccompProfile("seccomp", sc.GetSeccomp()); err != nil {
		return err
	}
	return checkAppArmorProfile("apparmor", sc.GetApparmor())
}

// profileFromCRI reads a SecurityProfile (checked by checkSeccompProfile
// or checkAppArmorProfile), or the deprecated string form
// ("runtime/default", "unconfined", "localhost/<path>"). Nothing set means
// unconfined, as containerd does. Every type is named: a type this edge
// does not know is refused before (checkEnums), and still reads as
// RuntimeDefault here, never as the weakest choice.
func profileFromCRI(p *runtimeapi.SecurityProfile, legacy string) container.Profile {
	if p != nil {
		switch p.GetProfileType() {
		case runtimeapi.SecurityProfile_RuntimeDefault:
			return container.Profile{Type: container.ProfileRuntimeDefault}
		case runtimeapi.SecurityProfile_Unconfined:
			return container.Profile{Type: container.ProfileUnconfined}
		case runtimeapi.SecurityProfile_Localhost:
			return container.Profile{Type: container.ProfileLocalhost, Path: p.GetLocalhostRef()}
		case runtimeapi.SecurityProfile_OCI:
			return container.Profile{Type: container.ProfileOCI, Ref: p.GetOciRef(), Path: p.GetBaseProfile().GetLocalhostRef()}
		}
		return container.Profile{Type: container.ProfileRuntimeDefault}
	}
	switch {
	case legacy == "runtime/default" || legacy == "docker/default":
		return container.Profile{Type: container.ProfileRuntimeDefault}
	case strings.HasPrefix(legacy, "localhost/"):
		return container.Profile{Type: container.ProfileLocalhost, Path: strings.TrimPrefix(legacy, "localhost/")}
	}
	return container.Profile{Type: container.ProfileUnconfined}
}

// appArmorFromCRI is profileFromCRI but for nothing set, which leaves the
// choice to the runtime (containerd: its default profile, kubernetes#51746).
// A SecurityProfile's LocalhostRef is kept whatever its type, so that a
// contradictory one can be refused.
func appArmorFromCRI(p *runtimeapi.SecurityProfile, legacy string) container.Profile {
	if p == nil && legacy == "" {
		return container.Profile{Type: container.ProfileUnspecified}
	}
	out := profileFromCRI(p, legacy)
	if p != nil {
		out.Path = p.GetLocalhostRef()
	}
	return out
}

package sandbox

import (
	"fmt"

	"github.com/minicri/minicri/internal/idmap"
)

// validate checks a config before anything is created.
func validate(cfg *Config) error {
	md := cfg.Metadata
	switch {
	case md.Name == "":
		return fmt.Errorf("%w: sandbox metadata.name is required", ErrInvalid)
	case md.Namespace == "":
		return fmt.Errorf("%w: sandbox metadata.namespace is required", ErrInvalid)
	case md.UID == "":
		return fmt.Errorf("%w: sandbox metadata.uid is required", ErrInvalid)
	}
	ns := cfg.Namespaces
	if ns.Network != ModePod && ns.Network != ModeNode {
		return fmt.Errorf("%w: network namespace mode %d is not supported for a pod", ErrInvalid, ns.Network)
	}
	if ns.IPC != ModePod && ns.IPC != ModeNode {
		return fmt.Errorf("%w: IPC namespace mode %d is not supported for a pod", ErrInvalid, ns.IPC)
	}
	if ns.PID == ModeTarget {
		return fmt.Errorf("%w: PID namespace mode TARGET is for containers, not pods", ErrInvalid)
	}
	if err := checkUserNS(ns); err != nil {
		return err
	}
	if ns.CgroupNSSet {
		return fmt.Errorf("%w: cgroupns_options must not be set for a pod sandbox: a cgroup namespace is a container's (its LinuxContainerSecurityContext.namespace_options)", ErrInvalid)
	}
	if cfg.Privileged && ns.OwnUserNS() {
		return fmt.Errorf("%w: a privileged pod cannot have its own user namespace", ErrInvalid)
	}
	if err := validateSecurity(cfg); err != nil {
		return err
	}
	normalized := make(map[string]string, len(cfg.Sysctls))
	for k, v := range cfg.Sysctls {
		name := normalizeSysctl(k)
		if err := checkSysctl(name, v, ns); err != nil {
			return err
		}
		normalized[name] = v
	}
	cfg.Sysctls = normalized
	return nil
}

// checkUserNS applies the CRI's rules for user namespaces: mode POD takes
// exactly one UID and one GID mapping, each mapping container ID 0; NODE
// means the host's; CONTAINER and TARGET are not defined for user namespaces.
func checkUserNS(ns Namespaces) error {
	u := ns.UserNS
	if u == nil || u.Mode == ModeNode {
		return nil
	}
	if u.Mode != ModePod {
		return fmt.Errorf("%w: user namespace mode %d is not supported (only POD or NODE)", ErrInvalid, u.Mode)
	}
	for kind, m := range map[string][]IDMapping{"uid": u.UIDs, "gid": u.GIDs} {
		if len(m) != 1 {
			return fmt.Errorf("%w: a pod user namespace needs exactly one %s mapping, got %d", ErrInvalid, kind, len(m))
		}
		if m[0].ContainerID != 0 {
			return fmt.Errorf("%w: the %s mapping must map container ID 0", ErrInvalid, kind)
		}
		if err := idmap.Check(m); err != nil {
			return fmt.Errorf("%w: %s mapping: %v", ErrInvalid, kind, err)
		}
	}
	if ns.Network == ModeNode || ns.IPC == ModeNode || ns.PID == ModeNode {
		return fmt.Errorf("%w: a pod with its own user namespace cannot use the host's network, IPC or PID namespace", ErrInvalid)
	}
	return nil
}

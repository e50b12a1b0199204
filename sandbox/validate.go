package sandbox

import (
	"fmt"
	"strings"
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
	if err := checkUserNS(ns); err != nil {
		return err
	}
	normalized := make(map[string]string, len(cfg.Sysctls))
	for k, v := range cfg.Sysctls {
		name := normalizeSysctl(k)
		if err := checkSysctl(name, ns); err != nil {
			return err
		}
		normalized[name] = v
	}
	cfg.Sysctls = normalized
	return nil
}

// normalizeSysctl turns the slash form (net/ipv4/ip_forward) into the dotted
// form; when the first separator is a slash, dots in the name are swapped for
// slashes, as Kubernetes does (net/ipv4/conf/eno2.100/rp_filter).
func normalizeSysctl(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

var ipcSysctls = []string{"kernel.shmmax", "kernel.shmmni", "kernel.shmall", "kernel.shm_rmid_forced", "kernel.msgmax", "kernel.msgmni", "kernel.msgmnb", "kernel.sem"}

// checkSysctl accepts only namespaced sysctls, in namespaces the pod owns.
func checkSysctl(name string, ns Namespaces) error {
	if strings.Contains(name, "..") || strings.ContainsAny(name, "= ") {
		return fmt.Errorf("%w: bad sysctl name %q", ErrInvalid, name)
	}
	isIPC := strings.HasPrefix(name, "fs.mqueue.")
	for _, s := range ipcSysctls {
		isIPC = isIPC || name == s
	}
	switch {
	case strings.HasPrefix(name, "net."):
		if ns.Network == ModeNode {
			return fmt.Errorf("%w: sysctl %q needs the pod's own network namespace, but the pod uses the host's", ErrInvalid, name)
		}
	case isIPC:
		if ns.IPC == ModeNode {
			return fmt.Errorf("%w: sysctl %q needs the pod's own IPC namespace, but the pod uses the host's", ErrInvalid, name)
		}
	default:
		return fmt.Errorf("%w: sysctl %q is not namespaced", ErrInvalid, name)
	}
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
		if m[0].Length == 0 {
			return fmt.Errorf("%w: the %s mapping is empty", ErrInvalid, kind)
		}
	}
	if ns.Network == ModeNode || ns.IPC == ModeNode || ns.PID == ModeNode {
		return fmt.Errorf("%w: a pod with its own user namespace cannot use the host's network, IPC or PID namespace", ErrInvalid)
	}
	return nil
}

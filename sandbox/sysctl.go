package sandbox

import (
	"fmt"
	"strings"
)

// Sysctl names come in two forms (sysctl(8), Kubernetes, runc): dotted,
// net.ipv4.conf.eno2/100.rp_filter, where a "/" inside a component stands
// for a "."; and slashed, net/ipv4/conf/eno2.100/rp_filter, where a "." is
// a "." (a VLAN interface name). minicri keeps the dotted form in its
// records and hands the pause the path under /proc/sys.

// normalizeSysctl turns the slash form into the dotted form: when the first
// separator is a slash, dots and slashes are swapped.
func normalizeSysctl(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return swapDotsAndSlashes(name)
}

func swapDotsAndSlashes(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, s)
}

// sysctlPath is the path of a dotted sysctl name relative to /proc/sys:
// net.ipv4.conf.eno2/100.rp_filter is net/ipv4/conf/eno2.100/rp_filter.
func sysctlPath(dotted string) string { return swapDotsAndSlashes(dotted) }

// checkSysctlName refuses a name whose path could leave /proc/sys or name
// a directory: every component must be a plain file name.
func checkSysctlName(dotted string) error {
	if dotted == "" || strings.ContainsAny(dotted, "= \x00\n") {
		return fmt.Errorf("%w: bad sysctl name %q", ErrInvalid, dotted)
	}
	for _, c := range strings.Split(sysctlPath(dotted), "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("%w: bad sysctl name %q (component %q)", ErrInvalid, dotted, c)
		}
	}
	return nil
}

// ipcSysctlPrefixes are the IPC-namespaced sysctls Kubernetes allows:
// kernel.shm*, kernel.msg*, kernel.sem and fs.mqueue.*.
var ipcSysctlPrefixes = []string{"kernel.shm", "kernel.msg", "fs.mqueue."}

func isIPCSysctl(name string) bool {
	if name == "kernel.sem" {
		return true
	}
	for _, p := range ipcSysctlPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// checkSysctl accepts only well-formed namespaced sysctls, in namespaces the
// pod owns, with a value that fits one write. Namespaced means what
// Kubernetes counts as such (k8s.io/component-helpers/node/util/sysctl):
// net.*, the IPC ones, kernel.domainname (UTS) and user.* (user namespace).
// The pause writes them from inside those namespaces.
func checkSysctl(name, value string, ns Namespaces) error {
	if err := checkSysctlName(name); err != nil {
		return err
	}
	if strings.ContainsRune(value, 0) {
		return fmt.Errorf("%w: sysctl %q: value holds a NUL byte", ErrInvalid, name)
	}
	switch {
	case strings.HasPrefix(name, "net."):
		if ns.Network == ModeNode {
			return fmt.Errorf("%w: sysctl %q needs the pod's own network namespace, but the pod uses the host's", ErrInvalid, name)
		}
	case isIPCSysctl(name):
		if ns.IPC == ModeNode {
			return fmt.Errorf("%w: sysctl %q needs the pod's own IPC namespace, but the pod uses the host's", ErrInvalid, name)
		}
	case name == "kernel.domainname":
		if ns.Network == ModeNode { // the pod's UTS namespace is the host's then
			return fmt.Errorf("%w: sysctl %q needs the pod's own UTS namespace, but the pod uses the host's", ErrInvalid, name)
		}
	case strings.HasPrefix(name, "user."):
		if !ns.OwnUserNS() {
			return fmt.Errorf("%w: sysctl %q needs the pod's own user namespace, but the pod uses the host's", ErrInvalid, name)
		}
	default:
		return fmt.Errorf("%w: sysctl %q is not namespaced", ErrInvalid, name)
	}
	return nil
}

package container

import (
	"fmt"
	"slices"
	"strings"

	"github.com/moby/sys/capability"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// defaultCapabilities is containerd's default capability set
// (pkg/oci defaultUnixCaps), the same as Docker's.
func defaultCapabilities() []string {
	return []string{
		"CAP_CHOWN",
		"CAP_DAC_OVERRIDE",
		"CAP_FSETID",
		"CAP_FOWNER",
		"CAP_MKNOD",
		"CAP_NET_RAW",
		"CAP_SETGID",
		"CAP_SETUID",
		"CAP_SETFCAP",
		"CAP_SETPCAP",
		"CAP_NET_BIND_SERVICE",
		"CAP_SYS_CHROOT",
		"CAP_KILL",
		"CAP_AUDIT_WRITE",
	}
}

// HostCapabilities returns the capabilities in the bounding set of the
// calling process, as "CAP_*" names. A privileged container gets exactly
// these: minicri cannot grant what it does not hold (e.g. CAP_SYS_RESOURCE
// when it runs without it).
func HostCapabilities() ([]string, error) {
	c, err := capability.NewPid2(0)
	if err != nil {
		return nil, fmt.Errorf("read capabilities: %w", err)
	}
	if err := c.Load(); err != nil {
		return nil, fmt.Errorf("read capabilities: %w", err)
	}
	supported, err := capability.ListSupported()
	if err != nil {
		return nil, fmt.Errorf("list capabilities: %w", err)
	}
	var out []string
	for _, cp := range supported {
		if c.Get(capability.BOUNDING, cp) {
			out = append(out, "CAP_"+strings.ToUpper(cp.String()))
		}
	}
	return out, nil
}

// normalizeCap turns "net_admin", "NET_ADMIN" or "cap_net_admin" into
// "CAP_NET_ADMIN".
func normalizeCap(name string) (string, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if n == "" || n == "CAP_" {
		return "", fmt.Errorf("%w: empty capability name", ErrInvalid)
	}
	if !strings.HasPrefix(n, "CAP_") {
		n = "CAP_" + n
	}
	return n, nil
}

func isAll(name string) bool {
	n := strings.ToUpper(strings.TrimSpace(name))
	return n == "ALL" || n == "CAP_ALL"
}

// buildCapabilities mirrors containerd's WithCapabilities (CRI) and
// WithPrivileged: bounding, effective and permitted are always the same
// set; "ALL" in add means every capability minicri holds, "ALL" in drop
// empties the set first, then single adds and drops apply. Ambient
// capabilities are the requested ones that are also in the set; they are
// made inheritable too, since the kernel raises an ambient capability only
// when it is permitted and inheritable.
func buildCapabilities(sec *Security, hostCaps []string) (*specs.LinuxCapabilities, error) {
	var caps []string
	if sec.Privileged {
		for _, c := range hostCaps {
			n, err := normalizeCap(c)
			if err != nil {
				return nil, err
			}
			caps = appendCap(caps, n)
		}
	} else {
		caps = defaultCapabilities()
		if slices.ContainsFunc(sec.CapAdd, isAll) {
			caps = nil
			for _, c := range hostCaps {
				n, err := normalizeCap(c)
				if err != nil {
					return nil, err
				}
				caps = appendCap(caps, n)
			}
		}
		if slices.ContainsFunc(sec.CapDrop, isAll) {
			caps = nil
		}
		for _, c := range sec.CapAdd {
			if isAll(c) {
				continue
			}
			n, err := normalizeCap(c)
			if err != nil {
				return nil, err
			}
			caps = appendCap(caps, n)
		}
		for _, c := range sec.CapDrop {
			if isAll(c) {
				continue
			}
			n, err := normalizeCap(c)
			if err != nil {
				return nil, err
			}
			caps = slices.DeleteFunc(caps, func(x string) bool { return x == n })
		}
	}

	var ambient []string
	for _, c := range sec.AmbientAdd {
		n, err := normalizeCap(c)
		if err != nil {
			return nil, err
		}
		if slices.Contains(caps, n) {
			ambient = appendCap(ambient, n)
		}
	}

	lc := &specs.LinuxCapabilities{
		Bounding:  slices.Clone(caps),
		Effective: slices.Clone(caps),
		Permitted: slices.Clone(caps),
	}
	if len(ambient) > 0 {
		lc.Inheritable = slices.Clone(ambient)
		lc.Ambient = ambient
	}
	return lc, nil
}

func appendCap(caps []string, c string) []string {
	if slices.Contains(caps, c) {
		return caps
	}
	return append(caps, c)
}

// maskedAndReadonlyPaths returns the request's lists, as containerd does
// (it starts from empty lists, containerd#5029): the kubelet always sends
// the lists it wants, its defaults for procMount Default and none for
// procMount Unmasked, which arrive as nil over gRPC. Unmasked is only for
// a container with its own user namespace (the API refuses it with
// hostUsers), where /proc/sys and friends stay owned by host root: without
// one, an empty list is the kubelet's defaults, or a client that sends none
// (crictl, critest) would give root in the container a writable
// /proc/sys/kernel/core_pattern, which the host runs as root. A privileged
// container gets none either way.
func maskedAndReadonlyPaths(sec *Security, ownUserNS bool) (masked, readonly []string) {
	if sec.Privileged {
		return nil, nil
	}
	masked, readonly = slices.Clone(sec.MaskedPaths), slices.Clone(sec.ReadonlyPaths)
	if !ownUserNS {
		if len(masked) == 0 {
			masked = defaultMaskedPaths()
		}
		if len(readonly) == 0 {
			readonly = defaultReadonlyPaths()
		}
	}
	return masked, readonly
}

// defaultMaskedPaths and defaultReadonlyPaths are the kubelet's lists for
// procMount Default (k8s.io/kubernetes v1.37 pkg/securitycontext, less the
// per-CPU thermal_throttle paths it adds where they exist).
func defaultMaskedPaths() []string {
	return []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
}

func defaultReadonlyPaths() []string {
	return []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
}

// checkAgainstPod refuses what a container asks beyond its pod, as the
// kubelet never would: privileges the pod does not have (containerd: "no
// privileged container allowed in sandbox"), a privileged container in a
// pod user namespace (its host devices, unmasked /proc and /sys and lack of
// seccomp would rest on the user namespace alone), namespaces that do not
// match the pod's (checkNamespaces), or the PID namespace of another pod's
// container. A TARGET is resolved to its full ID here, so that creation
// joins the very container that was checked.
func (m *Manager) checkAgainstPod(pod PodInfo, sec *Security) error {
	switch {
	case sec.Privileged && !pod.Privileged:
		return fmt.Errorf("%w: no privileged container allowed in pod sandbox %s, which is not privileged", ErrInvalid, pod.ID)
	case sec.Privileged && pod.UserNS != nil:
		return fmt.Errorf("%w: no privileged container allowed in pod sandbox %s, which has its own user namespace", ErrInvalid, pod.ID)
	}
	if err := checkNamespaces(pod, sec); err != nil {
		return err
	}
	if sec.PID != ModeTarget {
		return nil
	}
	if sec.TargetID == "" {
		return fmt.Errorf("%w: PID namespace mode TARGET needs a target_id", ErrInvalid)
	}
	t, err := m.store.get(sec.TargetID)
	if err != nil {
		return fmt.Errorf("%w: target container %s: %v", ErrNotFound, sec.TargetID, err)
	}
	if t.rec.PodID != pod.ID {
		return fmt.Errorf("%w: target container %s is not in pod sandbox %s", ErrInvalid, sec.TargetID, pod.ID)
	}
	sec.TargetID = t.ID()
	return nil
}

package security

import "slices"

// MaskedAndReadonlyPaths returns the request's lists, as containerd does
// (it starts from empty lists, containerd#5029): the kubelet always sends
// the lists it wants, its defaults for procMount Default and none for
// procMount Unmasked, which arrive as nil over gRPC. Unmasked is only for
// a container with its own user namespace (the API refuses it with
// hostUsers), where /proc/sys and friends stay owned by host root: without
// one, an empty list is the kubelet's defaults, or a client that sends none
// (crictl, critest) would give root in the container a writable
// /proc/sys/kernel/core_pattern, which the host runs as root. A privileged
// container gets none either way.
func MaskedAndReadonlyPaths(privileged, ownUserNS bool, maskedPaths, readonlyPaths []string) (masked, readonly []string) {
	if privileged {
		return nil, nil
	}
	masked, readonly = slices.Clone(maskedPaths), slices.Clone(readonlyPaths)
	if !ownUserNS {
		if len(masked) == 0 {
			masked = DefaultMaskedPaths()
		}
		if len(readonly) == 0 {
			readonly = DefaultReadonlyPaths()
		}
	}
	return masked, readonly
}

// DefaultMaskedPaths and DefaultReadonlyPaths are the kubelet's lists for
// procMount Default (k8s.io/kubernetes v1.37 pkg/securitycontext, less the
// per-CPU thermal_throttle paths it adds where they exist).
func DefaultMaskedPaths() []string {
	return []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
}

// DefaultReadonlyPaths: see DefaultMaskedPaths.
func DefaultReadonlyPaths() []string {
	return []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
}

package cgroupmount

import (
	"fmt"
	"slices"

	"github.com/minicri/minicri/internal/errdefs"
)

// Mode is the CRI's CgroupMountMode.
type Mode int

// The CRI's CgroupMountMode values.
const (
	// Unspecified keeps the runtime's default: read-only, read-write for a
	// privileged container.
	Unspecified Mode = iota
	// ReadOnly mounts cgroupfs read-only; a privileged container cannot
	// have it (its cgroupfs is always writable).
	ReadOnly
	// ReadWrite mounts cgroupfs read-write: cgroup v2 with nsdelegate only,
	// and never an unprivileged container in the host's cgroup namespace.
	ReadWrite
)

// Namespace is the CRI's CgroupNamespace mode of a container, or Default
// when the request has none (cgroupns_options nil).
type Namespace int

// The cgroup namespace a container asks for.
const (
	// Default: a namespace of its own on cgroup v2 for an unprivileged
	// container, else the host's (containerd's and CRI-O's rule).
	Default Namespace = iota
	// Container: a namespace of its own, rooted at its cgroup.
	Container
	// Node: the host's.
	Node
	// Pod and Target are not defined for cgroup namespaces: refused.
	Pod
	Target
)

// Request is what a container asks of its cgroups.
type Request struct {
	Mode       Mode
	Namespace  Namespace
	Privileged bool
}

// Host is what the node offers.
type Host struct {
	// Unified: /sys/fs/cgroup is cgroup v2 (not v1 or hybrid).
	Unified bool
	// Options are the host's cgroup2 mount options a mount in the host's
	// cgroup namespace must keep (nsdelegate, memory_recursiveprot).
	Options []string
}

// NSDelegate reports whether the host mounts cgroup v2 with nsdelegate.
func (h Host) NSDelegate() bool {
	return h.Unified && slices.Contains(h.Options, optNSDelegate)
}

// ReadWriteSupported reports whether a container can have a writable
// cgroupfs here: cgroup v2 mounted with nsdelegate.
func (h Host) ReadWriteSupported() bool { return h.Unified && h.NSDelegate() }

// NamespacesSupported reports whether both CONTAINER and NODE can be
// honoured for any container: on cgroup v2 only (minicri gives no
// container a cgroup namespace of its own on cgroup v1).
func (h Host) NamespacesSupported() bool { return h.Unified }

// View is how a container sees cgroups.
type View struct {
	// OwnNamespace: a new cgroup namespace, rooted at the container's cgroup.
	OwnNamespace bool
	// Writable: /sys/fs/cgroup is mounted read-write.
	Writable bool
	// Delegate: the container's cgroup is handed to the container's root
	// (see Delegate): a writable cgroupfs of its own namespace.
	Delegate bool
	// MountOptions are the options of the container's /sys/fs/cgroup.
	MountOptions []string
}

// Decide checks a request against the CRI's rules (ErrInvalid) and what the
// host can do (ErrFailedPrecondition) and returns how the container sees
// cgroups.
func Decide(r Request, h Host) (View, error) {
	if err := checkRequest(r); err != nil {
		return View{}, err
	}
	if err := checkHost(r, h); err != nil {
		return View{}, err
	}
	v := View{OwnNamespace: ownNamespace(r, h), Writable: writable(r)}
	v.Delegate = v.Writable && v.OwnNamespace && r.Mode == ReadWrite
	v.MountOptions = mountOptions(v, h)
	return v, nil
}

// checkRequest refuses what the CRI forbids whatever the host.
func checkRequest(r Request) error {
	switch r.Namespace {
	case Default, Container, Node:
	case Pod, Target:
		return fmt.Errorf("%w: cgroup namespace mode %s is not supported: a container has a cgroup namespace of its own (CONTAINER) or the host's (NODE)",
			errdefs.ErrInvalid, r.Namespace)
	default:
		return fmt.Errorf("%w: unknown cgroup namespace mode %d", errdefs.ErrInvalid, int(r.Namespace))
	}
	switch r.Mode {
	case Unspecified:
	case ReadOnly:
		if r.Privileged {
			return fmt.Errorf("%w: cgroup_mount_mode READ_ONLY cannot be honoured for a privileged container: its cgroup filesystem is always writable",
				errdefs.ErrInvalid)
		}
	case ReadWrite:
		if r.Namespace == Node && !r.Privileged {
			return fmt.Errorf("%w: cgroup_mount_mode READ_WRITE needs a cgroup namespace of the container's own (or a privileged container): cgroup namespace NODE would give it the host's cgroups",
				errdefs.ErrInvalid)
		}
	default:
		return fmt.Errorf("%w: unknown cgroup_mount_mode %d", errdefs.ErrInvalid, int(r.Mode))
	}
	return nil
}

// checkHost refuses what this node cannot honour.
func checkHost(r Request, h Host) error {
	if r.Namespace == Container && !h.NamespacesSupported() {
		return fmt.Errorf("%w: cgroup namespace mode CONTAINER needs cgroup v2: this node's /sys/fs/cgroup is cgroup v1",
			errdefs.ErrFailedPrecondition)
	}
	if r.Mode != ReadWrite {
		return nil
	}
	if !h.Unified {
		return fmt.Errorf("%w: cgroup_mount_mode READ_WRITE needs cgroup v2 mounted with nsdelegate: this node's /sys/fs/cgroup is cgroup v1",
			errdefs.ErrFailedPrecondition)
	}
	if !h.NSDelegate() {
		return fmt.Errorf("%w: cgroup_mount_mode READ_WRITE needs cgroup v2 mounted with nsdelegate: this node's /sys/fs/cgroup is mounted without it",
			errdefs.ErrFailedPrecondition)
	}
	return nil
}

// ownNamespace: CONTAINER yes, NODE no; by default (containerd's rule) only
// on cgroup v2 and for an unprivileged container.
func ownNamespace(r Request, h Host) bool {
	switch r.Namespace {
	case Container:
		return true
	case Node:
		return false
	}
	return h.Unified && !r.Privileged
}

// writable: as asked; by default only for a privileged container.
func writable(r Request) bool {
	switch r.Mode {
	case ReadWrite:
		return true
	case ReadOnly:
		return false
	}
	return r.Privileged
}

// mountOptions are the /sys/fs/cgroup mount's options. In the host's
// cgroup namespace a cgroup2 mount changes the one hierarchy's flags: keep
// the host's nsdelegate and memory_recursiveprot so that the container's
// mount does not strip them (containerd does the same). On a cgroup v1
// host /sys/fs/cgroup is a tmpfs and there are none.
func mountOptions(v View, h Host) []string {
	access := "ro"
	if v.Writable {
		access = "rw"
	}
	opts := []string{"nosuid", "noexec", "nodev", "relatime", access}
	if !v.OwnNamespace {
		opts = append(opts, h.Options...)
	}
	return opts
}

func (n Namespace) String() string {
	switch n {
	case Default:
		return "default"
	case Container:
		return "CONTAINER"
	case Node:
		return "NODE"
	case Pod:
		return "POD"
	case Target:
		return "TARGET"
	}
	return fmt.Sprintf("cgroupns(%d)", int(n))
}

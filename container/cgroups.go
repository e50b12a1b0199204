package container

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/cgroupmount"
)

// CgroupMountMode is the CRI's cgroup_mount_mode (see cgroupmount.Mode).
type CgroupMountMode = cgroupmount.Mode

// The CRI's CgroupMountMode values.
const (
	CgroupMountUnspecified = cgroupmount.Unspecified
	CgroupMountReadOnly    = cgroupmount.ReadOnly
	CgroupMountReadWrite   = cgroupmount.ReadWrite
)

// cgroupHost is what the host offers of cgroups: v2 or not (probed once),
// and the live options of its cgroup2 mount. A variable for tests.
var cgroupHost = func() cgroupmount.Host {
	if !cgroupUnified() {
		return cgroupmount.Host{}
	}
	return cgroupmount.Host{Unified: true, Options: cgroupmount.HostOptions()}
}

// cgroupView is how the container sees cgroups (its cgroup namespace and
// /sys/fs/cgroup mount), or why it cannot be created here.
func cgroupView(sec *Security) (cgroupmount.View, error) {
	ns := cgroupmount.Default
	if sec.CgroupNS != nil {
		switch *sec.CgroupNS {
		case ModeContainer:
			ns = cgroupmount.Container
		case ModeNode:
			ns = cgroupmount.Node
		case ModePod:
			ns = cgroupmount.Pod
		case ModeTarget:
			ns = cgroupmount.Target
		default:
			return cgroupmount.View{}, fmt.Errorf("%w: unknown cgroup namespace mode %d", ErrInvalid, *sec.CgroupNS)
		}
	}
	return cgroupmount.Decide(cgroupmount.Request{Mode: sec.CgroupMountMode, Namespace: ns, Privileged: sec.Privileged}, cgroupHost())
}

// delegateCgroup hands a container with a writable cgroupfs of its own
// cgroup namespace its cgroup: owned by the container's root (the pod's
// mapped root in a pod user namespace), as systemd delegates one, so that
// it can create child cgroups, enable controllers and move its processes.
// libcontainer would only chown under systemd, to the process's user; this
// is the same for both drivers and every runtime handler. Done between the
// runtime's create and Start: nothing of the container has run yet.
func (c *creation) delegateCgroup(context.Context) error {
	if c.rec.Config.Security.CgroupMountMode != CgroupMountReadWrite || !ownCgroupNS(c.spec) {
		return nil
	}
	uid, gid := 0, 0
	if c.pod.UserNS != nil {
		uid, gid = c.pod.UserNS.HostRoot()
	}
	dir := filepath.Join(cgroupmount.Root, cgdriver.FSPath(c.rec.CgroupsPath))
	if err := cgroupmount.Delegate(dir, uid, gid); err != nil {
		return fmt.Errorf("container %s: %w", c.rec.ID, err)
	}
	c.m.log.Debug("cgroup delegated", "container", c.rec.ID, "cgroup", dir, "uid", uid, "gid", gid)
	return nil
}

// ownCgroupNS reports whether the spec, as hooks left it, makes a new
// cgroup namespace.
func ownCgroupNS(s *specs.Spec) bool {
	return s != nil && s.Linux != nil && slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool {
		return n.Type == specs.CgroupNamespace && n.Path == ""
	})
}

// refuseDelegatedRestore: a container restored from a checkpoint cannot
// have READ_WRITE. Its cgroup is made when StartContainer restores it,
// past the delegation step, and CRIU puts its tasks in that cgroup, not in
// the child cgroups the checkpointed container had made.
func (c *creation) refuseDelegatedRestore(context.Context) error {
	if c.rec.Config.Security.CgroupMountMode == CgroupMountReadWrite {
		return fmt.Errorf("%w: cgroup_mount_mode READ_WRITE cannot be honoured for a container restored from a checkpoint", ErrFailedPrecondition)
	}
	return nil
}

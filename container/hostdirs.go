package container

import (
	"fmt"
	"os"

	"github.com/minicri/minicri/internal/hostdir"
)

// Who may reach a container's files on the host.
//
// A container writes what it likes in its writable layer (a setuid copy of
// a shell, a device node) and an image brings setuid files and file
// capabilities; any host path to them would let a local user run or open
// them. So every directory that holds container files is root's only
// (hostdir.Private): <root>/containers and each <root>/containers/<id>
// (the upper and work dirs), and each <state>/containers/<id> (the rootfs
// mount, the idmapped layer views, the image volume mounts). Mount flags
// are not the defence: nosuid or nodev on the host-side rootfs overlay
// would be copied into the container by its bind mount of the rootfs and
// break setuid programs inside.
//
// The one exception is the init of a container in a pod with its own user
// namespace: it runs as the pod's root, an unprivileged host user, and
// libcontainer has it bind-mount and pivot into the rootfs by path, so it
// must be able to search <state>, <state>/containers and
// <state>/containers/<id>. The first two are searchable by all (0711, not
// listable); the last is opened only to the pod's root group (root:<the
// host GID of the pod's GID 0>, 0710: the init walks with that fsgid) and
// only while the monitor creates the container, then made root's 0700 again
// as soon as the init is in its own root (see creation.createInMonitor; a
// restart closes what a crash left open). Opened to all, a local user could
// open the rootfs in that window and keep the descriptor for the life of
// the container. In the window the rootfs holds only the image, seen
// through idmapped views (setuid files show owned by the pod's unprivileged
// host IDs), and an empty upper dir; the idmapped views and image volumes
// sit in private subdirectories
// (libcontainer hands bind-mount sources it cannot reach to the init as
// file descriptors). Other bind-mount sources (pod files, /dev/shm) are
// reached the same way, so their directories stay private too.

// ensureDirs creates the manager's directories with their modes, and closes
// the per-container directories an older minicri (or a crash in the window
// above) left open.
func (m *Manager) ensureDirs() error {
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{
		{m.recordsDir(), hostdir.Private},
		{m.stateDir(), hostdir.Traversable},
		{m.runcRoot(), hostdir.Traversable},
	} {
		if err := hostdir.Ensure(d.path, d.mode); err != nil {
			return err
		}
	}
	for _, d := range []string{m.recordsDir(), m.stateDir()} {
		if err := hostdir.Tighten(d, hostdir.Private); err != nil {
			return fmt.Errorf("close container directories: %w", err)
		}
	}
	return nil
}

// openRootfsPath lets the init of a container in a pod user namespace,
// whose root is the host group gid, walk to its rootfs; closeRootfsPath
// takes that back. See above.
func (m *Manager) openRootfsPath(id string, gid int) error {
	return hostdir.OpenToGroup(m.ctrStateDir(id), gid)
}

func (m *Manager) closeRootfsPath(id string) error {
	return hostdir.Close(m.ctrStateDir(id), nil, hostdir.Private)
}

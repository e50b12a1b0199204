package lazy

import (
	"fmt"
	"io"
	"log"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FSType is the filesystem type of a lazy mount in /proc/self/mountinfo.
const FSType = "fuse." + fsName

const fsName = "minicri-lazyfs"

// cacheTimeout is how long the kernel may keep names and attributes: the
// tree never changes.
const cacheTimeout = time.Hour

// Mounted is a layer served at a mount point.
type Mounted struct {
	Mountpoint string
	Layer      *Layer
	srv        *fuse.Server
}

// Mount serves l's tree read-only at mountpoint (an existing directory),
// mounted by mount(2) itself (no fusermount), readable by every user under
// the kernel's own permission checks on the TOC's modes, without suid or
// device files, as overlayfs's lower layers need no more.
func Mount(mountpoint string, l *Layer, debug bool) (*Mounted, error) {
	root, ok := l.r.Lookup("")
	if !ok {
		return nil, fmt.Errorf("lazy mount %s: TOC has no root", mountpoint)
	}
	timeout := cacheTimeout
	logger := log.New(io.Discard, "", 0)
	if debug {
		logger = log.Default()
	}
	opts := &fs.Options{
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		RootStableAttr:  &fs.StableAttr{Mode: syscall.S_IFDIR, Ino: 1},
		Logger:          logger,
		NullPermissions: true, // a mode of 0 is 0, not go-fuse's default 0644
		MountOptions: fuse.MountOptions{
			AllowOther:           true,
			Options:              []string{"default_permissions"},
			FsName:               fsName,
			Name:                 fsName,
			DirectMount:          true,
			DirectMountStrict:    true,
			DirectMountFlags:     syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV,
			EnableSymlinkCaching: true,
			// A pod with its own user namespace sees its layers through
			// idmapped mounts; the kernel (6.12+) allows one of a FUSE
			// mount only when its server says so. The tree ignores who
			// asks (the kernel checks the TOC's modes: default_permissions).
			IDMappedMount: true,
			MaxWrite:      1 << 20, // also max_read: requests of up to 1 MiB
			MaxReadAhead:  1 << 20,
			Debug:         debug,
			Logger:        logger,
		},
	}
	srv, err := fs.Mount(mountpoint, &node{l: l, e: root, ino: 1, xattrs: root.Xattrs}, opts)
	if err != nil {
		return nil, fmt.Errorf("lazy mount %s: %w", mountpoint, err)
	}
	return &Mounted{Mountpoint: mountpoint, Layer: l, srv: srv}, nil
}

// Unmount unmounts and waits until the kernel has let go of the
// filesystem; it fails (EBUSY) while a file of it is open or a mount sits on it.
func (m *Mounted) Unmount() error {
	if err := m.srv.Unmount(); err != nil {
		return fmt.Errorf("lazy unmount %s: %w", m.Mountpoint, err)
	}
	m.srv.Wait()
	return nil
}

// Detach unmounts lazily (MNT_DETACH): the mount point is free at once, the
// filesystem is served until its last user lets go; done is closed then.
func (m *Mounted) Detach() (done <-chan struct{}, err error) {
	if err := syscall.Unmount(m.Mountpoint, syscall.MNT_DETACH); err != nil {
		return nil, fmt.Errorf("lazy detach %s: %w", m.Mountpoint, err)
	}
	ch := make(chan struct{})
	go func() {
		m.srv.Wait()
		close(ch)
	}()
	return ch, nil
}

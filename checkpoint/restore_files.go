package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/checkpoint-restore/go-criu/v8/crit/images/fdinfo"
	sk_inet "github.com/checkpoint-restore/go-criu/v8/crit/images/sk-inet"
	sk_unix "github.com/checkpoint-restore/go-criu/v8/crit/images/sk-unix"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// checkCheckpointFiles refuses a checkpoint whose file image (files.img)
// would give the container descriptors it could not open itself: CRIU
// opens the images' files and sockets, binds and connects them as root,
// before it drops to the tasks' credentials. See checkRegFile,
// checkInetSocket, checkUnixSocket (restore_fileperms.go: what the spec's
// process may open).
func (x *restoration) checkCheckpointFiles(context.Context) error {
	return checkFilesAgainst(x.imagesDir(), x.t.Spec())
}

// legacyFileImages are CRIU's per-kind file images of before files.img,
// which CRIU still reads on restore and the CRIU minicri dumps with never
// writes: refused rather than checked.
var legacyFileImages = []string{"reg-files.img", "inetsk.img", "unixsk.img", "packetsk.img", "ext-files.img"}

func checkFilesAgainst(images string, spec *specs.Spec) error {
	if spec.Process == nil {
		return fmt.Errorf("%w: spec has no process", ErrInvalid)
	}
	for _, name := range legacyFileImages {
		if _, err := os.Lstat(filepath.Join(images, name)); err == nil {
			return fmt.Errorf("%w: checkpoint holds %s, a file image of CRIU's old format", ErrFailedPrecondition, name)
		}
	}
	es, err := readEntries(filepath.Join(images, "files.img"), &fdinfo.FileEntry{}) // restore_images.go
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: checkpoint image files.img: %v", ErrInvalid, err)
	}
	for _, e := range es {
		fe := e.(*fdinfo.FileEntry)
		if err := checkFileEntry(fe, spec); err != nil {
			return fmt.Errorf("%w: checkpoint file %d: %v", ErrFailedPrecondition, fe.GetId(), err)
		}
	}
	return nil
}

// checkFileEntry checks one entry of files.img by its kind.
func checkFileEntry(fe *fdinfo.FileEntry, spec *specs.Spec) error {
	p := spec.Process
	switch fe.GetType() {
	case fdinfo.FdTypes_REG:
		if fe.GetReg() == nil {
			return errors.New("a regular file entry without its file")
		}
		return checkRegFile(fe.GetReg().GetName(), fe.GetReg().GetFlags(), spec)
	case fdinfo.FdTypes_INETSK:
		return checkInetSocket(fe.GetIsk(), spec)
	case fdinfo.FdTypes_UNIXSK:
		return checkUnixSocket(fe.GetUsk(), spec)
	case fdinfo.FdTypes_PACKETSK:
		if !mayUse(p, "CAP_NET_RAW") {
			return errors.New("a packet socket, which the container (no CAP_NET_RAW) cannot open")
		}
	}
	return nil
}

// checkRegFile refuses a file or directory the container could not open
// with flags: a path that is not clean and absolute, a writable open on a
// mount the spec makes read-only, a file of the rootfs or of a bind mount
// whose mode denies the spec's user (without CAP_DAC_OVERRIDE, or
// CAP_DAC_READ_SEARCH for reading). A missing file is CRIU's to refuse.
func checkRegFile(name string, flags uint32, spec *specs.Spec) error {
	if name != filepath.Clean(name) || !filepath.IsAbs(name) {
		return fmt.Errorf("file %q is not a clean absolute path", name)
	}
	if flags&unix.O_PATH != 0 {
		return nil // opens nothing: no access is checked
	}
	want := uint32(4)
	switch flags & unix.O_ACCMODE {
	case unix.O_WRONLY:
		want = 2
	case unix.O_RDWR:
		want = 6
	}
	if want&2 != 0 && readOnlyAt(name, spec) {
		return fmt.Errorf("file %s is opened for writing on a mount the spec makes read-only", name)
	}
	st, err := statInContainer(name, spec)
	if errors.Is(err, os.ErrNotExist) || st == nil && err == nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("file %s cannot be checked: %v", name, err)
	}
	if !mayAccess(st, spec.Process, want) {
		return fmt.Errorf("file %s (mode %#o, uid %d, gid %d) is opened %s, which the container's process (uid %d) may not",
			name, st.Mode&0o7777, st.Uid, st.Gid, accessName[want], spec.Process.User.UID)
	}
	return nil
}

var accessName = map[uint32]string{4: "for reading", 2: "for writing", 6: "for reading and writing"}

// checkInetSocket refuses a raw socket without CAP_NET_RAW and a socket
// bound to a privileged port (below the spec's
// net.ipv4.ip_unprivileged_port_start, the kernel's 1024 if it has none)
// without CAP_NET_BIND_SERVICE.
func checkInetSocket(sk *sk_inet.InetSkEntry, spec *specs.Spec) error {
	if sk == nil {
		return errors.New("an inet socket entry without its socket")
	}
	p := spec.Process
	if sk.GetType() == unix.SOCK_RAW && !mayUse(p, "CAP_NET_RAW") {
		return errors.New("a raw socket, which the container (no CAP_NET_RAW) cannot open")
	}
	if port := sk.GetSrcPort(); port != 0 && port < unprivilegedPortStart(spec) && !mayUse(p, "CAP_NET_BIND_SERVICE") {
		return fmt.Errorf("a socket bound to port %d, which the container (no CAP_NET_BIND_SERVICE) cannot bind", port)
	}
	return nil
}

// checkUnixSocket refuses a socket whose path name (its own, or an
// external peer's, which CRIU connects to) the container could not use: a
// relative name, an existing socket file it may not write (connect), a
// missing one whose directory it may not write (bind). Abstract names
// are open to any process of the network namespace.
func checkUnixSocket(sk *sk_unix.UnixSkEntry, spec *specs.Spec) error {
	if sk == nil {
		return errors.New("a unix socket entry without its socket")
	}
	name := string(sk.GetName())
	if name == "" || name[0] == 0 {
		return nil
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(sk.GetNameDir(), name)
	}
	if !filepath.IsAbs(name) || filepath.Clean(name) != name {
		return fmt.Errorf("unix socket %q is not a clean absolute path", name)
	}
	st, err := statInContainer(name, spec)
	target, want := name, uint32(2)
	if errors.Is(err, os.ErrNotExist) {
		target, want = filepath.Dir(name), 3 // write and search the directory
		st, err = statInContainer(target, spec)
	}
	switch {
	case errors.Is(err, os.ErrNotExist) || st == nil && err == nil:
		return nil
	case err != nil:
		return fmt.Errorf("unix socket %s cannot be checked: %v", name, err)
	case !mayAccess(st, spec.Process, want):
		return fmt.Errorf("unix socket %s: %s (mode %#o, uid %d, gid %d) is not writable by the container's process (uid %d)",
			name, target, st.Mode&0o7777, st.Uid, st.Gid, spec.Process.User.UID)
	}
	return nil
}

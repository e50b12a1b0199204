package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Hard links to lower layers.
//
// A layer may hold a hard link to a file of a lower layer (the OCI image
// spec allows it). Each layer is unpacked into its own directory, so the
// link has nothing to link to there. containerd applies such a layer to a
// mounted overlay of the layers below (link(2) copies the target up) when
// it cannot write the upper directory directly; here the filter that feeds
// the unpacker (filterLayer) does the equivalent: it finds the target in
// the merged view of the lower layers and puts a copy of it, with its
// directories' attributes, into the stream before the link. The copy goes
// through the unpacker like any entry (its escape checks) and is charged
// to the pull's limits. The layer's directory then depends on the layers
// below, so it is stored under the layer's chain ID, not its diff ID.
//
// The target is looked up component by component in each lower directory
// (top first) without following any symlink: a symlink, or any
// non-directory, on the way fails the pull, as do "..", whiteouts and
// opaque directories that hide the target.

// entry kinds a layer's tar has written so far, by name.
const (
	kindDir      = 1
	kindFile     = 2 // any non-directory
	kindWhiteout = 3
	kindOpaque   = 4 // a flag on kindDir
)

// layerNames records the kind of each name a layer's tar has written, by
// a hash of the name (a collision can only fail a link, never misplace one).
type layerNames struct {
	seed  maphash.Seed
	kinds map[uint64]uint8
}

func newLayerNames() *layerNames {
	return &layerNames{seed: maphash.MakeSeed(), kinds: map[uint64]uint8{}}
}

func (n *layerNames) key(name string) uint64 { return maphash.String(n.seed, name) }

func (n *layerNames) get(name string) uint8 { return n.kinds[n.key(name)] }

func (n *layerNames) set(name string, k uint8) { n.kinds[n.key(name)] = k }

// cleanName is a tar entry's name relative to the layer's root.
func cleanName(name string) string {
	return strings.TrimPrefix(path.Clean("/"+name), "/")
}

// record notes what hdr writes.
func (n *layerNames) record(hdr *tar.Header) {
	name := cleanName(hdr.Name)
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	switch {
	case base == ".wh..wh..opq":
		n.set(dir, n.get(dir)|kindOpaque|kindDir)
	case strings.HasPrefix(base, ".wh."):
		n.set(path.Join(dir, strings.TrimPrefix(base, ".wh.")), kindWhiteout)
	case hdr.Typeflag == tar.TypeDir:
		n.set(name, n.get(name)&kindOpaque|kindDir)
	default:
		n.set(name, kindFile)
	}
}

// lowerLinks resolves hard links to lower layers for one layer.
type lowerLinks struct {
	// lowers returns the directories of the layers below, top first,
	// once they are all unpacked; nil for a bottom layer.
	lowers func(ctx context.Context) ([]string, error)
	ctx    context.Context

	dirs  []string
	names *layerNames
	used  bool // a copy was made: the layer depends on its lowers
}

// linkComponents splits a hard link's target into path components (an
// absolute one is taken from the layer's root), or fails for one that
// leaves the root.
func linkComponents(target string) ([]string, error) {
	var out []string
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(out) == 0 {
				return nil, fmt.Errorf("hard link target %q leaves the layer", sanitizeRemote(target, 200))
			}
			out = out[:len(out)-1]
		default:
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("hard link to the root %q", sanitizeRemote(target, 200))
	}
	return out, nil
}

// prepare is called for each hard link entry before it is written: if its
// target is not a file this layer wrote, it writes (through emit) copies of
// the target and of the directories it needs from the lower layers.
func (ll *lowerLinks) prepare(hdr *tar.Header, emit func(*tar.Header, io.Reader) error) error {
	target := hdr.Linkname
	comps, err := linkComponents(target)
	if err != nil {
		return err
	}
	name := strings.Join(comps, "/")
	switch ll.names.get(name) {
	case kindFile:
		return nil // in this layer: the unpacker links it
	case kindWhiteout:
		return fmt.Errorf("hard link %q to %q, which the layer deletes", sanitizeRemote(hdr.Name, 200), sanitizeRemote(target, 200))
	case 0:
	default:
		return fmt.Errorf("hard link %q to directory %q", sanitizeRemote(hdr.Name, 200), sanitizeRemote(target, 200))
	}
	for i := 1; i < len(comps); i++ {
		switch k := ll.names.get(strings.Join(comps[:i], "/")); {
		case k == kindFile || k == kindWhiteout || k&kindOpaque != 0:
			return fmt.Errorf("hard link %q: target %q not found in the layer", sanitizeRemote(hdr.Name, 200), sanitizeRemote(target, 200))
		}
	}
	if ll.dirs == nil {
		if ll.lowers != nil {
			if ll.dirs, err = ll.lowers(ll.ctx); err != nil {
				return err
			}
		}
		if len(ll.dirs) == 0 {
			return fmt.Errorf("hard link %q: target %q not found in the layer", sanitizeRemote(hdr.Name, 200), sanitizeRemote(target, 200))
		}
	}
	hit, err := lookupLower(ll.dirs, comps)
	if err != nil {
		return fmt.Errorf("hard link %q to %q: %w", sanitizeRemote(hdr.Name, 200), sanitizeRemote(target, 200), err)
	}
	defer hit.close()
	ll.used = true
	if err := ll.emitParents(comps, hit, emit); err != nil {
		return err
	}
	// The link's own directories, when the lowers have them: else the
	// unpacker would create them 0755 over the lower ones' attributes.
	if lc, err := linkComponents(hdr.Name); err == nil && len(lc) > 1 {
		if ph, err := lookupLower(ll.dirs, append(lc[:len(lc)-1:len(lc)-1], "")); err == nil {
			err = ll.emitParents(lc, ph, emit)
			ph.close()
			if err != nil {
				return err
			}
		}
	}
	return ll.emitCopy(name, hit, emit)
}

// emitParents writes the directories on the way to comps that this layer
// has not written, with the lower layers' attributes.
func (ll *lowerLinks) emitParents(comps []string, hit *lowerHit, emit func(*tar.Header, io.Reader) error) error {
	for i := 0; i < len(comps)-1 && i < len(hit.dirs); i++ {
		p := strings.Join(comps[:i+1], "/")
		if ll.names.get(p) != 0 || hit.dirs[i] == nil {
			continue
		}
		h := statHeader(p+"/", hit.dirs[i])
		h.Typeflag = tar.TypeDir
		h.PAXRecords = hit.dirXs[i]
		if err := emit(h, nil); err != nil {
			return err
		}
		ll.names.set(p, kindDir)
	}
	return nil
}

// emitCopy writes the lower file hit as name.
func (ll *lowerLinks) emitCopy(name string, hit *lowerHit, emit func(*tar.Header, io.Reader) error) error {
	h := statHeader(name, &hit.st)
	var body io.Reader
	switch hit.st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		h.Typeflag = tar.TypeReg
		h.Size = hit.st.Size
		fd, err := unix.Openat(hit.dirfd, hit.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("hard link target %q: %w", sanitizeRemote(name, 200), err)
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Ino != hit.st.Ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return fmt.Errorf("hard link target %q changed", sanitizeRemote(name, 200))
		}
		body = io.LimitReader(f, h.Size)
	case unix.S_IFLNK:
		h.Typeflag = tar.TypeSymlink
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(hit.dirfd, hit.name, buf)
		if err != nil {
			return fmt.Errorf("hard link target %q: %w", sanitizeRemote(name, 200), err)
		}
		h.Linkname = string(buf[:n])
	case unix.S_IFCHR, unix.S_IFBLK:
		h.Typeflag = tar.TypeChar
		if hit.st.Mode&unix.S_IFMT == unix.S_IFBLK {
			h.Typeflag = tar.TypeBlock
		}
		h.Devmajor, h.Devminor = int64(unix.Major(hit.st.Rdev)), int64(unix.Minor(hit.st.Rdev))
	case unix.S_IFIFO:
		h.Typeflag = tar.TypeFifo
	default:
		return fmt.Errorf("hard link target %q: unsupported file type %#o", sanitizeRemote(name, 200), hit.st.Mode&unix.S_IFMT)
	}
	h.PAXRecords = hit.xattrs
	if err := emit(h, body); err != nil {
		return err
	}
	ll.names.set(name, kindFile)
	return nil
}

// statHeader is a tar header with st's owner, mode and times.
func statHeader(name string, st *unix.Stat_t) *tar.Header {
	return &tar.Header{
		Name: name, Mode: int64(st.Mode & 0o7777), Uid: int(st.Uid), Gid: int(st.Gid),
		ModTime:    time.Unix(st.Mtim.Unix()),
		AccessTime: time.Unix(st.Atim.Unix()),
		Format:     tar.FormatPAX,
	}
}

// lowerHit is a file found in the lower layers: its directory (an open fd)
// and name there, its stat, its extended attributes as PAX records, and
// the stat of each directory on the way (from the topmost layer that has it).
type lowerHit struct {
	dirfd  int
	name   string
	st     unix.Stat_t
	xattrs map[string]string
	dirs   []*unix.Stat_t
	dirXs  []map[string]string
}

func (h *lowerHit) close() {
	if h.dirfd >= 0 {
		_ = unix.Close(h.dirfd)
	}
}

var (
	errLowerNotFound = errors.New("target not found in the layers below")
	errLowerNotDir   = errors.New("a non-directory (such as a symlink) is on the way to the target")
)

// lookupLower finds comps in the merged view of dirs (top first). A last
// component "" asks only for the directories on the way (dirs of the hit).
func lookupLower(dirs []string, comps []string) (*lowerHit, error) {
	hit := &lowerHit{dirfd: -1, dirs: make([]*unix.Stat_t, len(comps)-1), dirXs: make([]map[string]string, len(comps)-1)}
	for _, d := range dirs {
		found, stop, err := hit.walk(d, comps)
		if err != nil {
			return nil, err
		}
		if found {
			return hit, nil
		}
		if stop {
			break
		}
	}
	if comps[len(comps)-1] == "" {
		return hit, nil
	}
	return nil, errLowerNotFound
}

// walk looks comps up in one layer directory. found: hit is set; stop: the
// layers below are hidden (an opaque directory or a whiteout on the way).
func (hit *lowerHit) walk(dir string, comps []string) (found, stop bool, _ error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, false, fmt.Errorf("lower layer: %w", err)
	}
	defer func() {
		if !found {
			_ = unix.Close(fd)
		}
	}()
	opaque := false
	for i, c := range comps {
		last := i == len(comps)-1
		if last && c == "" {
			return false, opaque, nil
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return false, opaque, nil
			}
			return false, false, err
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0 {
			return false, true, errLowerNotFound // a whiteout
		}
		if last {
			if isDir {
				return false, true, errors.New("target is a directory")
			}
			xs, err := xattrRecords(fd, c)
			if err != nil {
				return false, true, err
			}
			hit.dirfd, hit.name, hit.st, hit.xattrs = fd, c, st, xs
			return true, true, nil
		}
		if !isDir {
			return false, true, errLowerNotDir
		}
		if hit.dirs[i] == nil {
			if hit.dirXs[i], err = xattrRecords(fd, c); err != nil {
				return false, true, err
			}
			hit.dirs[i] = &st
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, true, err
		}
		_ = unix.Close(fd)
		fd = next
		opaque = opaque || isOpaque(fd)
	}
	return false, opaque, nil
}

// isOpaque reports whether the directory fd is an opaque overlay directory.
func isOpaque(fd int) bool {
	v := make([]byte, 1)
	n, err := unix.Fgetxattr(fd, "trusted.overlay.opaque", v)
	return err == nil && n == 1 && v[0] == 'y'
}

// xattrRecords reads the extended attributes of name in dirfd (without
// opening it: it may be a device) as PAX records, less overlayfs's own.
func xattrRecords(dirfd int, name string) (map[string]string, error) {
	p := fmt.Sprintf("/proc/self/fd/%d/%s", dirfd, name)
	sz, err := unix.Llistxattr(p, nil)
	if err != nil || sz == 0 {
		if errors.Is(err, unix.ENOTSUP) {
			err = nil
		}
		return nil, err
	}
	buf := make([]byte, sz)
	if sz, err = unix.Llistxattr(p, buf); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range strings.Split(strings.TrimRight(string(buf[:sz]), "\x00"), "\x00") {
		if k == "" || strings.HasPrefix(k, "trusted.overlay.") {
			continue
		}
		vsz, err := unix.Lgetxattr(p, k, nil)
		if err != nil {
			return nil, err
		}
		v := make([]byte, vsz)
		if vsz, err = unix.Lgetxattr(p, k, v); err != nil {
			return nil, err
		}
		out["SCHILY.xattr."+k] = string(v[:vsz])
	}
	return out, nil
}

package checkpoint

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/internal/beneath"
)

// rootfsDiffRace, when set (tests only), runs between reading an entry's
// metadata and opening it: where a running container can swap the entry.
var rootfsDiffRace func(rel string)

// maxDiffDepth bounds how deep the walk of a writable layer descends: it
// holds one directory descriptor per level, and a container could nest
// directories a hundred thousand deep to exhaust the daemon's descriptors.
// No real file tree comes near it (nor could it be unpacked by path).
const maxDiffDepth = 1000

// writeRootfsDiff writes the overlay upper dir as a tar to w, without its
// whiteouts and opaque markers; it returns what they delete from the image
// ("/etc/motd"), sorted. An opaque directory deletes every entry the lower
// dirs have in it that the upper dir does not have again.
//
// The container runs while its layer is read and may swap any entry for a
// symbolic link, a device node or a FIFO at any moment, so no path is ever
// resolved: each directory is read through a descriptor, each entry is
// looked at relative to its directory's descriptor (openat2, beneath it, no
// links, O_PATH: nothing is opened yet), and only if that is still the
// inode that was looked at, a regular file or a directory, is it opened for
// reading (an open runs a device's driver, as host root).
func writeRootfsDiff(ctx context.Context, w io.Writer, upper string, lower []string) ([]string, error) {
	root, err := os.OpenFile(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	dw := &diffWalker{ctx: ctx, tw: tar.NewWriter(w), lower: lower, links: map[uint64]string{}, deleted: map[string]bool{}}
	if err := dw.dir(root, "", 0); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(dw.deleted))
	for p := range dw.deleted {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, dw.tw.Close()
}

// diffWalker walks an upper dir into a tar.
type diffWalker struct {
	ctx     context.Context
	tw      *tar.Writer
	lower   []string
	links   map[uint64]string // inode -> first name, for hard links
	deleted map[string]bool
}

// dir archives the entries of the open directory d, at rel in the layer
// ("" for its top, depth 0), in name order.
func (dw *diffWalker) dir(d *os.File, rel string, depth int) error {
	if depth > maxDiffDepth {
		return fmt.Errorf("%w: the writable layer nests directories more than %d deep (at %s)", ErrFailedPrecondition, maxDiffDepth, rel)
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	sort.Strings(names)
	if rel != "" && isOpaque(d) {
		for _, name := range hiddenByOpaque(d, rel, dw.lower) {
			dw.deleted["/"+filepath.Join(rel, name)] = true
		}
	}
	for _, name := range names {
		if err := dw.ctx.Err(); err != nil {
			return err
		}
		if err := dw.entry(d, rel, name, depth); err != nil {
			return err
		}
	}
	return nil
}

// entry archives the entry name of the directory d (at dirRel, depth).
func (dw *diffWalker) entry(d *os.File, dirRel, name string, depth int) error {
	rel := filepath.Join(dirRel, name)
	dfd := int(d.Fd())
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // removed while we walk: the container is running
		}
		return fmt.Errorf("stat %s: %w", rel, err)
	}
	if rootfsDiffRace != nil {
		rootfsDiffRace(rel)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK:
		return nil // sockets cannot be archived
	case unix.S_IFCHR:
		if st.Rdev == 0 { // an overlay whiteout
			dw.deleted["/"+rel] = true
			return nil
		}
	case unix.S_IFLNK:
		target, err := readlinkat(dfd, name)
		if err != nil {
			return nil // replaced while we walk
		}
		return dw.tw.WriteHeader(statHeader(&st, rel, target))
	case unix.S_IFDIR:
		sub, now, err := openEntry(dfd, name, &st)
		if sub == nil {
			return err
		}
		defer sub.Close()
		if err := dw.tw.WriteHeader(statHeader(&now, rel, "")); err != nil {
			return err
		}
		return dw.dir(sub, rel, depth+1)
	case unix.S_IFREG:
		return dw.file(dfd, name, rel, &st)
	}
	return dw.tw.WriteHeader(statHeader(&st, rel, "")) // devices, FIFOs
}

// file archives a regular file (or a hard link to one already archived).
func (dw *diffWalker) file(dfd int, name, rel string, st *unix.Stat_t) error {
	if st.Nlink > 1 {
		if first, ok := dw.links[st.Ino]; ok {
			hdr := statHeader(st, rel, "")
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			return dw.tw.WriteHeader(hdr)
		}
	}
	f, now, err := openEntry(dfd, name, st)
	if f == nil {
		return err
	}
	defer f.Close()
	if now.Nlink > 1 {
		dw.links[now.Ino] = rel
	}
	hdr := statHeader(&now, rel, "")
	if err := dw.tw.WriteHeader(hdr); err != nil {
		return err
	}
	// A file that changes size while it is read is cut or padded to the size
	// it had (the container runs).
	n, err := io.CopyN(dw.tw, f, hdr.Size)
	if errors.Is(err, io.EOF) {
		_, err = io.CopyN(dw.tw, zeros{}, hdr.Size-n)
	}
	return err
}

// openEntry opens the regular file or directory name in the directory dfd
// for reading, if it is still the inode st describes. It looks first, with
// an O_PATH descriptor (beneath dfd, following no link, opening nothing),
// and opens that inode only then, through /proc/self/fd: a device node or a
// FIFO swapped in is never opened. It returns a nil file (and no error) when
// the entry went or changed: the container runs, and an entry swapped for
// something else is simply not archived.
func openEntry(dfd int, name string, st *unix.Stat_t) (*os.File, unix.Stat_t, error) {
	var now unix.Stat_t
	pfd, err := beneath.Open(dfd, name, unix.O_PATH, 0)
	if err != nil {
		for _, gone := range []error{unix.ENOENT, unix.ELOOP, unix.ENOTDIR, unix.EXDEV} {
			if errors.Is(err, gone) {
				return nil, now, nil
			}
		}
		return nil, now, fmt.Errorf("open %s: %w", name, err)
	}
	defer unix.Close(pfd)
	if err := unix.Fstat(pfd, &now); err != nil {
		return nil, now, err
	}
	typ := now.Mode & unix.S_IFMT
	if now.Ino != st.Ino || now.Dev != st.Dev || typ != st.Mode&unix.S_IFMT || (typ != unix.S_IFREG && typ != unix.S_IFDIR) {
		return nil, now, nil
	}
	flags := unix.O_RDONLY
	if typ == unix.S_IFDIR {
		flags |= unix.O_DIRECTORY
	}
	fd, err := beneath.Reopen(pfd, flags)
	if err != nil {
		return nil, now, fmt.Errorf("open %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), name), now, nil
}

// statHeader is the tar header of an entry (link: a symlink's target).
func statHeader(st *unix.Stat_t, name, link string) *tar.Header {
	hdr := &tar.Header{
		Name: name, Linkname: link, Mode: int64(st.Mode & 0o7777),
		Uid: int(st.Uid), Gid: int(st.Gid), ModTime: time.Unix(st.Mtim.Unix()),
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size
	case unix.S_IFDIR:
		hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
	case unix.S_IFLNK:
		hdr.Typeflag = tar.TypeSymlink
	case unix.S_IFCHR, unix.S_IFBLK:
		hdr.Typeflag = tar.TypeChar
		if st.Mode&unix.S_IFMT == unix.S_IFBLK {
			hdr.Typeflag = tar.TypeBlock
		}
		hdr.Devmajor, hdr.Devminor = int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev))
	case unix.S_IFIFO:
		hdr.Typeflag = tar.TypeFifo
	}
	return hdr
}

// readlinkat reads the target of the link name in the directory dfd.
func readlinkat(dfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// isOpaque reports an overlay opaque directory.
func isOpaque(d *os.File) bool {
	for _, attr := range []string{"trusted.overlay.opaque", "user.overlay.opaque"} {
		buf := make([]byte, 8)
		if n, err := unix.Fgetxattr(int(d.Fd()), attr, buf); err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}

// hiddenByOpaque lists the names the lower dirs have in rel that the opaque
// upper directory d does not have. The lower dirs are looked into beneath
// each layer without following links: an image's link must not list a host
// directory into deleted.files.
func hiddenByOpaque(d *os.File, rel string, lower []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lower {
		for _, name := range lowerNames(l, rel) {
			if seen[name] {
				continue
			}
			seen[name] = true
			var st unix.Stat_t
			if err := unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
				out = append(out, name)
			}
		}
	}
	return out
}

// lowerNames lists the directory rel of the lower dir l (nil if none).
func lowerNames(l, rel string) []string {
	root, err := unix.Open(l, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	fd, err := beneath.Open(root, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	return names
}

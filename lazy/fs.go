package lazy

import (
	"context"
	"errors"
	"math"
	"strings"
	"syscall"

	"github.com/containerd/stargz-snapshotter/estargz"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The overlayfs conventions of a lower layer (those of the OCI image spec's
// whiteouts, turned into what overlayfs reads).
const (
	whiteoutPrefix = ".wh."
	opaqueMarker   = ".wh..wh..opq"
	opaqueXattr    = "trusted.overlay.opaque"
)

// node is any file of the tree: its TOC entry (nil for a whiteout), its
// xattrs (the entry's, plus the opaque mark of a directory) and the count of
// its subdirectories (a directory's link count is 2 plus that).
type node struct {
	fs.Inode
	l       *Layer
	e       *estargz.TOCEntry
	ino     uint64
	xattrs  map[string][]byte
	subdirs uint32
}

var (
	_ fs.NodeGetattrer   = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeReader      = (*node)(nil)
	_ fs.NodeReadlinker  = (*node)(nil)
	_ fs.NodeGetxattrer  = (*node)(nil)
	_ fs.NodeListxattrer = (*node)(nil)
	_ fs.NodeOnAdder     = (*node)(nil)
	_ fs.NodeStatfser    = (*node)(nil)
)

// tree builds the nodes below the root.
type tree struct {
	l     *Layer
	nodes map[*estargz.TOCEntry]*node // hard links share one
	next  uint64                      // the next inode number
}

// OnAdd (the root's) builds the whole tree once mounted: the tree is small
// next to its files, and every node stays (persistent inodes).
func (n *node) OnAdd(ctx context.Context) {
	if n.e == nil || n.e.Name != "" {
		return
	}
	t := &tree{l: n.l, nodes: map[*estargz.TOCEntry]*node{n.e: n}, next: 2}
	t.addChildren(ctx, n, true)
}

// addChildren adds a directory's entries: whiteouts as char 0/0 devices,
// the opaque marker as its directory's xattr, the landmarks (at the root) not at all.
func (t *tree) addChildren(ctx context.Context, dir *node, root bool) {
	dir.e.ForeachChild(func(name string, e *estargz.TOCEntry) bool {
		switch {
		case root && (name == estargz.PrefetchLandmark || name == estargz.NoPrefetchLandmark):
		case name == opaqueMarker:
			dir.xattrs = withXattr(dir.xattrs, opaqueXattr, []byte("y"))
		case strings.HasPrefix(name, whiteoutPrefix):
			wh := &node{l: t.l, ino: t.ino()}
			dir.AddChild(strings.TrimPrefix(name, whiteoutPrefix),
				dir.NewPersistentInode(ctx, wh, fs.StableAttr{Mode: syscall.S_IFCHR, Ino: wh.ino}), true)
		default:
			t.add(ctx, dir, name, e)
		}
		return true
	})
}

// add adds one entry, or a new name of an entry already added (a hard link).
func (t *tree) add(ctx context.Context, dir *node, name string, e *estargz.TOCEntry) {
	if old := t.nodes[e]; old != nil {
		if e.Type == "dir" { // a second name of a directory would make a loop
			t.l.log.Warn("lazy: hard link to a directory left out", "name", name, "target", e.Name)
			return
		}
		dir.AddChild(name, old.EmbeddedInode(), true)
		return
	}
	mode := fileType(e)
	if mode == 0 {
		t.l.log.Warn("lazy: entry of unknown type left out", "name", e.Name, "type", e.Type)
		return
	}
	n := &node{l: t.l, e: e, ino: t.ino(), xattrs: e.Xattrs}
	t.nodes[e] = n
	dir.AddChild(name, dir.NewPersistentInode(ctx, n, fs.StableAttr{Mode: mode, Ino: n.ino}), true)
	if e.Type == "dir" {
		dir.subdirs++
		t.addChildren(ctx, n, false)
	}
}

func (t *tree) ino() uint64 {
	t.next++
	return t.next - 1
}

func withXattr(m map[string][]byte, k string, v []byte) map[string][]byte {
	out := make(map[string][]byte, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

// fileType is the S_IFMT bits of a TOC entry's type (0 for an unknown one).
func fileType(e *estargz.TOCEntry) uint32 {
	switch e.Type {
	case "dir":
		return syscall.S_IFDIR
	case "reg":
		return syscall.S_IFREG
	case "symlink":
		return syscall.S_IFLNK
	case "char":
		return syscall.S_IFCHR
	case "block":
		return syscall.S_IFBLK
	case "fifo":
		return syscall.S_IFIFO
	}
	return 0
}

// Getattr fills the attributes from the TOC entry.
func (n *node) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.attr(&out.Attr)
	return 0
}

func (n *node) attr(a *fuse.Attr) {
	a.Ino = n.ino
	a.Blksize = 4096
	if n.e == nil { // a whiteout: char 0/0, mode 0
		a.Mode, a.Nlink = syscall.S_IFCHR, 1
		return
	}
	e := n.e
	a.Mode = fileType(e) | u32(e.Mode&07777)
	a.Uid, a.Gid = u32(e.UID), u32(e.GID)
	a.Nlink = u32(max(e.NumLink, 1))
	switch e.Type {
	case "dir":
		a.Nlink, a.Size = 2+n.subdirs, 4096
	case "reg":
		a.Size = uint64(max(e.Size, 0)) //nolint:gosec // not negative
	case "symlink":
		a.Size = uint64(len(e.LinkName))
	case "char", "block":
		// The kernel's 32-bit encoding (12-bit major, 20-bit minor), as stat's.
		a.Rdev = uint32(unix.Mkdev(u32(e.DevMajor), u32(e.DevMinor))) //nolint:gosec // see above
	}
	a.Blocks = (a.Size + 511) / 512
	t := e.ModTime()
	if !t.IsZero() {
		a.SetTimes(&t, &t, &t)
	}
}

// Open answers ENOSYS: the kernel then sends no more opens nor releases on
// this mount (two round trips less per open of a file) and keeps the
// files' pages cached (its default without opens, FOPEN_KEEP_CACHE); the
// mount is read-only, so the kernel refuses writes itself.
func (n *node) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, syscall.ENOSYS
}

// Read reads through the layer's cache: a chunk the registry does not
// deliver in time, or not as the TOC says, is EIO.
func (n *node) Read(ctx context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if n.e == nil || n.e.Type != "reg" {
		return nil, syscall.EINVAL
	}
	m, err := n.l.ReadFile(ctx, n.e, dest, off)
	switch {
	case err == nil:
		return fuse.ReadResultData(dest[:m]), 0
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled):
		return nil, syscall.EINTR // the reader was interrupted
	default:
		n.l.log.Warn("lazy: read failed", "name", n.e.Name, "offset", off, "error", err)
		return nil, syscall.EIO
	}
}

// Readlink is a symlink's target.
func (n *node) Readlink(context.Context) ([]byte, syscall.Errno) {
	if n.e == nil || n.e.Type != "symlink" {
		return nil, syscall.EINVAL
	}
	return []byte(n.e.LinkName), 0
}

// Getxattr answers from the entry's xattrs.
func (n *node) Getxattr(_ context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	v, ok := n.xattrs[attr]
	if !ok {
		return 0, syscall.ENODATA
	}
	if len(dest) == 0 {
		return u32(len(v)), 0
	}
	if len(dest) < len(v) {
		return u32(len(v)), syscall.ERANGE
	}
	return u32(copy(dest, v)), 0
}

// Listxattr lists the entry's xattr names, each NUL-terminated.
func (n *node) Listxattr(_ context.Context, dest []byte) (uint32, syscall.Errno) {
	var b []byte
	for k := range n.xattrs {
		b = append(append(b, k...), 0)
	}
	if len(dest) == 0 {
		return u32(len(b)), 0
	}
	if len(dest) < len(b) {
		return u32(len(b)), syscall.ERANGE
	}
	return u32(copy(dest, b)), 0
}

// Statfs answers what overlayfs and df ask of a layer: names of up to 255
// bytes (overlayfs takes the largest name length of its layers as its own:
// go-fuse's 0 made every name too long, ENAMETOOLONG, in an overlay of lazy
// layers alone, such as an image volume of two of them), its files' bytes
// in 4 KiB blocks, none free (it is read-only).
func (n *node) Statfs(_ context.Context, out *fuse.StatfsOut) syscall.Errno {
	const block = 4096
	out.NameLen = 255
	out.Bsize, out.Frsize = block, block
	out.Blocks = uint64((max(n.l.total, 0) + block - 1) / block) //nolint:gosec // not negative
	return 0
}

// u32 clamps a TOC's number (or a length) into a uint32.
func u32[T int | int64](v T) uint32 {
	return uint32(min(max(int64(v), 0), math.MaxUint32)) //nolint:gosec // clamped
}

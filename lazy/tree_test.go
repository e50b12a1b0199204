package lazy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/stargz-snapshotter/estargz"
	"golang.org/x/sys/unix"
)

// want is what a file of the mounted tree must be.
type want struct {
	mode     uint32 // with the type bits
	uid, gid uint32
	size     int64
	mtime    time.Time // zero: not checked (directories the tar does not list)
	link     string
	rdev     uint64
	data     []byte
	xattrs   map[string]string
	nlink    uint32
	sameAs   string // a hard link: the same inode as this path
}

var tarType = map[byte]uint32{tar.TypeDir: syscall.S_IFDIR, tar.TypeReg: syscall.S_IFREG, tar.TypeSymlink: syscall.S_IFLNK,
	tar.TypeChar: syscall.S_IFCHR, tar.TypeBlock: syscall.S_IFBLK, tar.TypeFifo: syscall.S_IFIFO}

// expectedTree is the tree overlayfs must see of the tar's layer: whiteouts
// as char 0/0, opaque markers as the xattr, implicit parents as 0755 root dirs.
func expectedTree(entries []tarEntry) map[string]*want {
	out := map[string]*want{}
	for _, e := range entries {
		name := strings.TrimSuffix(e.hdr.Name, "/")
		dir, base := path.Split(name)
		addParents(out, path.Clean(dir))
		switch {
		case base == opaqueMarker:
			out[path.Clean(dir)].xattrs[opaqueXattr] = "y"
		case strings.HasPrefix(base, whiteoutPrefix):
			out[dir+strings.TrimPrefix(base, whiteoutPrefix)] = &want{mode: syscall.S_IFCHR, nlink: 1, xattrs: map[string]string{}}
		case e.hdr.Typeflag == tar.TypeLink:
			orig := out[e.hdr.Linkname]
			orig.nlink++
			out[name] = orig
		default:
			out[name] = wantOf(e)
		}
	}
	for name, w := range out { // a hard link's second name
		if w.sameAs == "" {
			for other, v := range out {
				if v == w && other < name {
					c := *w
					c.sameAs = other
					out[name] = &c
				}
			}
		}
	}
	for name, w := range out {
		if w.mode&syscall.S_IFMT == syscall.S_IFDIR {
			w.nlink = 2 + uint32(countSubdirs(out, name))
		}
	}
	return out
}

func wantOf(e tarEntry) *want {
	h := e.hdr
	w := &want{mode: tarType[h.Typeflag] | uint32(h.Mode), uid: uint32(h.Uid), gid: uint32(h.Gid), size: h.Size,
		mtime: h.ModTime, link: h.Linkname, data: e.data, xattrs: map[string]string{}, nlink: 1}
	if h.Typeflag == tar.TypeSymlink {
		w.size = int64(len(h.Linkname))
	}
	if h.Typeflag == tar.TypeChar || h.Typeflag == tar.TypeBlock {
		w.rdev = unix.Mkdev(uint32(h.Devmajor), uint32(h.Devminor))
	}
	for k, v := range h.PAXRecords {
		if x, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok {
			w.xattrs[x] = v
		}
	}
	return w
}

func addParents(out map[string]*want, dir string) {
	for d := dir; d != "." && d != "/" && out[d] == nil; d = path.Dir(d) {
		out[d] = &want{mode: syscall.S_IFDIR | 0o755, xattrs: map[string]string{}}
	}
}

func countSubdirs(out map[string]*want, dir string) int {
	n := 0
	for name, w := range out {
		if path.Dir(name) == dir && w.mode&syscall.S_IFMT == syscall.S_IFDIR {
			n++
		}
	}
	return n
}

// compareTree checks every file under mnt against want, metadata and bytes.
func compareTree(t *testing.T, mnt string, wants map[string]*want) {
	t.Helper()
	seen := map[string]bool{}
	inos := map[string]uint64{}
	err := filepath.WalkDir(mnt, func(p string, _ fs.DirEntry, err error) error {
		if err != nil || p == mnt {
			return err
		}
		rel, _ := filepath.Rel(mnt, p)
		seen[rel] = true
		w := wants[rel]
		if w == nil {
			t.Errorf("%s: in the mount, not in the layer", rel)
			return nil
		}
		inos[rel] = compareFile(t, p, rel, w)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range wants {
		if !seen[name] {
			t.Errorf("%s: in the layer, not in the mount", name)
		}
		if w.sameAs != "" && inos[name] != inos[w.sameAs] {
			t.Errorf("%s: inode %d, its hard link %s has %d", name, inos[name], w.sameAs, inos[w.sameAs])
		}
	}
}

func compareFile(t *testing.T, p, rel string, w *want) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	if st.Mode != w.mode || st.Uid != w.uid || st.Gid != w.gid || uint32(st.Nlink) != w.nlink || st.Rdev != w.rdev {
		t.Errorf("%s: mode %o uid %d gid %d nlink %d rdev %d, want %o %d %d %d %d", rel,
			st.Mode, st.Uid, st.Gid, st.Nlink, st.Rdev, w.mode, w.uid, w.gid, w.nlink, w.rdev)
	}
	if !w.mtime.IsZero() && st.Mtim.Sec != w.mtime.Unix() {
		t.Errorf("%s: mtime %d, want %d", rel, st.Mtim.Sec, w.mtime.Unix())
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, w.data) || st.Size != w.size {
			t.Errorf("%s: %d bytes (stat %d), err %v; want %d bytes, equal %v", rel, len(b), st.Size, err, len(w.data), bytes.Equal(b, w.data))
		}
	case syscall.S_IFLNK:
		if l, err := os.Readlink(p); err != nil || l != w.link || st.Size != w.size {
			t.Errorf("%s: link %q (%v), size %d; want %q", rel, l, err, st.Size, w.link)
		}
	}
	if got := xattrsOf(t, p); !equalMaps(got, w.xattrs) {
		t.Errorf("%s: xattrs %q, want %q", rel, got, w.xattrs)
	}
	return st.Ino
}

func xattrsOf(t *testing.T, p string) map[string]string {
	t.Helper()
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		t.Fatalf("listxattr %s: %v", p, err)
	}
	out := map[string]string{}
	for _, k := range strings.Split(string(buf[:n]), "\x00") {
		if k == "" {
			continue
		}
		v := make([]byte, 256)
		m, err := unix.Lgetxattr(p, k, v)
		if err != nil {
			t.Fatalf("getxattr %s %s: %v", p, k, err)
		}
		out[k] = string(v[:m])
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// TestTreeMatchesTar: every file of the mounted layer, of every kind, has the
// tar's metadata and bytes (the big ones read chunk by chunk through the
// registry), with whiteouts and opaque directories as overlayfs reads them.
func TestTreeMatchesTar(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	r := newRegistry(t, blob)
	m := mountFixture(t, r, toc, Options{})
	compareTree(t, m.Mountpoint, expectedTree(entries))
	if f, err := os.OpenFile(filepath.Join(m.Mountpoint, "bin/app"), os.O_RDWR, 0); !errors.Is(err, syscall.EROFS) {
		if err == nil {
			f.Close()
		}
		t.Errorf("open for writing: %v, want EROFS", err)
	}
	if !m.Layer.Complete() {
		t.Errorf("every file read, yet the layer has %d of %d bytes", m.Layer.Fetched(), m.Layer.Total())
	}
	t.Logf("blob %d bytes, files %d bytes, %d chunks in %d streams, %d range requests",
		len(blob), m.Layer.Total(), len(m.Layer.chunks), len(m.Layer.streams), r.requests.Load())
}

// TestSharedStreams: a layer whose small files share gzip members
// (estargz's min chunk size: entries at an inner offset of one stream)
// reads the same.
func TestSharedStreams(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed, estargz.WithMinChunkSize(32<<10))
	r := newRegistry(t, blob)
	m := mountFixture(t, r, toc, Options{})
	if len(m.Layer.streams) >= len(m.Layer.chunks) {
		t.Fatalf("%d chunks in %d streams: none shared", len(m.Layer.chunks), len(m.Layer.streams))
	}
	compareTree(t, m.Mountpoint, expectedTree(entries))
	t.Logf("%d chunks in %d streams, %d range requests", len(m.Layer.chunks), len(m.Layer.streams), r.requests.Load())
}

// TestConcurrentReads: readers of the same big file at once, in random
// order of chunks, all get its bytes.
func TestConcurrentReads(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	m := mountFixture(t, newRegistry(t, blob), toc, Options{})
	big := entryData(entries, "bin/app")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.Open(filepath.Join(m.Mountpoint, "bin/app"))
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			offs := make([]int, 0, 64)
			for off := (g * 4099) % testChunk; off < len(big); off += testChunk / 2 {
				offs = append(offs, off)
			}
			sort.Slice(offs, func(i, j int) bool { return (offs[i]*7+g)%13 < (offs[j]*7+g)%13 })
			buf := make([]byte, 5000)
			for _, off := range offs {
				n, _ := f.ReadAt(buf, int64(off))
				if !bytes.Equal(buf[:n], big[off:min(off+len(buf), len(big))]) {
					t.Errorf("reader %d at %d: wrong bytes", g, off)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestLayerWithoutData: layers with no file bytes at all (directories,
// links, empty files; or nothing) mount and read.
func TestLayerWithoutData(t *testing.T) {
	for name, entries := range map[string][]tarEntry{
		"no data": {dirEntry("etc/", 0o755, 0), fileEntry("etc/empty", 0o600, nil), linkEntry(tar.TypeSymlink, "etc/l", "empty")},
		"empty":   nil,
	} {
		t.Run(name, func(t *testing.T) {
			tarb := buildTar(t, entries)
			blob, err := estargz.Build(io.NewSectionReader(bytes.NewReader(tarb), 0, int64(len(tarb))))
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(blob)
			blob.Close()
			m := mountFixture(t, newRegistry(t, data), blob.TOCDigest(), Options{})
			compareTree(t, m.Mountpoint, expectedTree(entries))
			if err := m.Layer.Prefetch(context.Background()); err != nil || !m.Layer.Complete() {
				t.Errorf("prefetch: %v, complete %v", err, m.Layer.Complete())
			}
		})
	}
}

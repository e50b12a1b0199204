package lazy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/stargz-snapshotter/estargz"
	digest "github.com/opencontainers/go-digest"

	"github.com/minicri/minicri/test/registry/fixture"
)

// testChunk is the chunk size of the test layers: small, so that the big
// files span many chunks.
const testChunk = 64 << 10

// tarEntry is one entry of the test layer's tar.
type tarEntry struct {
	hdr  tar.Header
	data []byte
}

var mtime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func dirEntry(name string, mode int64, uid int) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: uid, ModTime: mtime}}
}

func fileEntry(name string, mode int64, data []byte) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)),
		Uid: 1000, Gid: 2000, ModTime: mtime.Add(time.Duration(len(name)) * time.Hour)}, data: data}
}

func linkEntry(typ byte, name, target string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: typ, Name: name, Linkname: target, Mode: 0o777, ModTime: mtime}}
}

func devEntry(typ byte, name string, major, minor int64) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: typ, Name: name, Mode: 0o620, Devmajor: major, Devminor: minor, Uid: 0, Gid: 5, ModTime: mtime}}
}

// fixtureEntries is a layer with a file of every kind: directories of
// several modes and owners, regular files empty, small, of exactly one chunk
// and of many chunks (random and compressible), setuid, with xattrs; symlinks;
// hard links; devices and a fifo; a whiteout and an opaque directory; and a
// file whose parent directories the tar does not list.
func fixtureEntries() []tarEntry {
	xf := fileEntry("etc/caps", 0o755, []byte("cap"))
	xf.hdr.PAXRecords = map[string]string{"SCHILY.xattr.user.note": "hello", "SCHILY.xattr.security.capability": "\x01\x00\x00\x02\x00\x30\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}
	xd := dirEntry("etc/xdir/", 0o750, 0)
	xd.hdr.PAXRecords = map[string]string{"SCHILY.xattr.trusted.custom": "v"}
	big := randomBytes(1, 40*testChunk+123)
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog\n"), 40000)
	return []tarEntry{
		dirEntry("bin/", 0o755, 0), dirEntry("etc/", 0o755, 0), dirEntry("tmp/", 0o1777, 0),
		dirEntry("home/", 0o755, 0), dirEntry("home/user/", 0o700, 1000), xd,
		fileEntry("bin/app", 0o755, big),
		fileEntry("bin/tool", 0o4755, randomBytes(2, 3000)),
		fileEntry("etc/empty", 0o644, nil),
		fileEntry("etc/shadow", 0o000, []byte("root:*:19000::::::\n")),
		fileEntry("etc/one-chunk", 0o600, randomBytes(3, testChunk)),
		fileEntry("etc/text", 0o644, text),
		fileEntry("home/user/.profile", 0o640, []byte("export PS1='$ '\n")),
		xf,
		linkEntry(tar.TypeSymlink, "bin/sh", "app"),
		linkEntry(tar.TypeSymlink, "etc/abs", "/etc/text"),
		linkEntry(tar.TypeSymlink, "etc/dangling", "../nowhere"),
		linkEntry(tar.TypeLink, "bin/app-hardlink", "bin/app"),
		linkEntry(tar.TypeLink, "etc/text-hardlink", "etc/text"),
		devEntry(tar.TypeChar, "etc/null", 1, 3),
		devEntry(tar.TypeBlock, "etc/loop0", 7, 0),
		devEntry(tar.TypeFifo, "tmp/fifo", 0, 0),
		fileEntry(".wh.gone", 0o644, nil),
		dirEntry("opq/", 0o755, 0),
		fileEntry("opq/.wh..wh..opq", 0o644, nil),
		fileEntry("opq/kept", 0o644, []byte("kept\n")),
		fileEntry("implicit/sub/deep", 0o644, randomBytes(4, 3*testChunk+1)),
	}
}

// prioritized are the files the test layers put before the landmark.
var prioritized = []string{"bin/tool", "etc/one-chunk"}

func buildTar(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// buildBlob makes an eStargz blob of the tar, the prioritized files first.
func buildBlob(t testing.TB, tarb []byte, level int, more ...estargz.Option) ([]byte, digest.Digest) {
	t.Helper()
	opts := append([]estargz.Option{estargz.WithChunkSize(testChunk), estargz.WithCompressionLevel(level),
		estargz.WithPrioritizedFiles(prioritized)}, more...)
	b, err := estargz.Build(io.NewSectionReader(bytes.NewReader(tarb), 0, int64(len(tarb))), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	blob, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	return blob, b.TOCDigest()
}

// registry serves one blob with range requests; down makes every request
// hang until it is up again or its client gives up; noRanges answers a range
// with the whole blob.
type registry struct {
	srv      *httptest.Server
	blob     atomic.Pointer[[]byte]
	down     atomic.Bool
	reset    atomic.Bool // close each connection without an answer
	noRanges atomic.Bool
	requests atomic.Int64
	latency  time.Duration // per request
	mu       sync.Mutex
	at       []time.Time // when each request came
	rate     int64       // bytes per second, 0: unlimited
}

func newRegistry(t testing.TB, blob []byte) *registry {
	r := &registry{}
	r.blob.Store(&blob)
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	r.mu.Lock()
	r.at = append(r.at, time.Now())
	r.mu.Unlock()
	for r.down.Load() {
		select {
		case <-req.Context().Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	if r.reset.Load() {
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = c.Close()
		}
		return
	}
	b := *r.blob.Load()
	time.Sleep(r.latency)
	if r.rate > 0 {
		w = fixture.Throttled(w, r.rate)
	}
	if r.noRanges.Load() {
		_, _ = w.Write(b)
		return
	}
	http.ServeContent(w, req, "blob", time.Time{}, bytes.NewReader(b))
}

// arrivals is when the requests came, in order.
func (r *registry) arrivals() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.at...)
}

// blobReader reads the registry's blob with a client of its own (so that
// closing its idle connections leaves no goroutine).
func (r *registry) blobReader() *HTTPBlob {
	return &HTTPBlob{URL: r.srv.URL + "/v2/test/blobs/x", Len: int64(len(*r.blob.Load())),
		Client: &http.Client{Transport: &http.Transport{}}}
}

func needFUSE(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("needs /dev/fuse")
	}
}

// mountFixture opens the registry's blob as a layer and mounts it in a
// temporary directory, both undone at the test's end.
func mountFixture(t testing.TB, r *registry, toc digest.Digest, opts Options) *Mounted {
	t.Helper()
	needFUSE(t)
	dir := t.TempDir()
	if opts.Dir == "" {
		opts.Dir = filepath.Join(dir, "cache")
	}
	opts.TOCDigest = toc
	l, err := Open(context.Background(), r.blobReader(), opts)
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := Mount(mnt, l, false)
	if err != nil {
		_ = l.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
			_, _ = m.Detach()
		}
		if err := l.Close(); err != nil {
			t.Errorf("close layer: %v", err)
		}
	})
	return m
}

func entryData(entries []tarEntry, name string) []byte {
	for _, e := range entries {
		if e.hdr.Name == name {
			return e.data
		}
	}
	panic("no " + name + " in the fixture")
}

// layerFixture is a registry serving the fixture layer, a temporary
// directory with an empty mount point (detached at the end, whatever
// happened) and the spec that mounts the layer there.
func layerFixture(t *testing.T) ([]tarEntry, MountSpec, string) {
	t.Helper()
	needFUSE(t)
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	r := newRegistry(t, blob)
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	return entries, MountSpec{Mountpoint: mnt, Dir: filepath.Join(dir, "cache"), TOCDigest: toc.String(),
		Source: Source{URL: r.blobReader().URL, Size: int64(len(blob))}}, dir
}

package lazy

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/stargz-snapshotter/estargz"
	digest "github.com/opencontainers/go-digest"
)

// chunkRegion is where in the blob the stream of name's chunk at off lies.
func chunkRegion(t *testing.T, blob []byte, name string, off int64) (int64, int64) {
	t.Helper()
	r, err := estargz.Open(io.NewSectionReader(bytes.NewReader(blob), 0, int64(len(blob))))
	if err != nil {
		t.Fatal(err)
	}
	ce, ok := r.ChunkEntryForOffset(name, off)
	if !ok {
		t.Fatalf("no chunk of %s at %d", name, off)
	}
	return ce.Offset, ce.NextOffset()
}

// tamperValid changes one byte of a chunk's data in a blob built without
// compression (stored deflate blocks hold the bytes as they are) and fixes
// the member's CRC: the gzip is valid, only the TOC's chunk digest can tell.
func tamperValid(t *testing.T, blob []byte, start, end int64, data []byte) {
	t.Helper()
	region := blob[start:end]
	i := bytes.Index(region, data[100:164])
	if i < 0 {
		t.Fatal("chunk bytes not found in the stored stream")
	}
	region[i+10] ^= 0xff
	zr, err := gzip.NewReader(bytes.NewReader(region))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	content, _ := io.ReadAll(zr) // the old CRC no longer matches
	binary.LittleEndian.PutUint32(region[len(region)-8:], crc32.ChecksumIEEE(content))
	zr, _ = gzip.NewReader(bytes.NewReader(region))
	zr.Multistream(false)
	if _, err := io.ReadAll(zr); err != nil {
		t.Fatalf("tampered stream is not valid gzip: %v", err)
	}
}

func readAt(p string, n int, off int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	m, err := f.ReadAt(buf, off)
	if err == io.EOF {
		err = nil
	}
	return buf[:m], err
}

// TestTamperedChunkIsEIO: a chunk whose bytes decompress fine but are not
// the TOC's is EIO, every time; the file's other chunks and other files read.
func TestTamperedChunkIsEIO(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.NoCompression)
	big := entryData(entries, "bin/app")
	start, end := chunkRegion(t, blob, "bin/app", 5*testChunk)
	tamperValid(t, blob, start, end, big[5*testChunk:])
	m := mountFixture(t, newRegistry(t, blob), toc, Options{})
	app := filepath.Join(m.Mountpoint, "bin/app")
	for range 2 {
		if b, err := readAt(app, 4096, 5*testChunk+4096); !errors.Is(err, syscall.EIO) {
			t.Fatalf("tampered chunk: %d bytes, error %v; want EIO", len(b), err)
		}
	}
	if b, err := readAt(app, 4096, 4*testChunk); err != nil || !bytes.Equal(b, big[4*testChunk:4*testChunk+4096]) {
		t.Errorf("good chunk of the same file: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(m.Mountpoint, "etc/text")); err != nil || !bytes.Equal(b, entryData(entries, "etc/text")) {
		t.Errorf("another file: %v", err)
	}
	if m.Layer.Complete() {
		t.Error("a layer with a corrupt chunk reads complete")
	}
}

// TestGarbledStreamIsEIO: a stream that does not even decompress is EIO too.
func TestGarbledStreamIsEIO(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	start, end := chunkRegion(t, blob, "bin/app", 7*testChunk)
	for i := start + (end-start)/2; i < start+(end-start)/2+16; i++ {
		blob[i] ^= 0x5a
	}
	m := mountFixture(t, newRegistry(t, blob), toc, Options{})
	if _, err := readAt(filepath.Join(m.Mountpoint, "bin/app"), 100, 7*testChunk); !errors.Is(err, syscall.EIO) {
		t.Fatalf("garbled stream: error %v, want EIO", err)
	}
}

// TestTOCDigestChecked: a blob whose TOC is not the manifest's is refused.
func TestTOCDigestChecked(t *testing.T) {
	blob, _ := buildBlob(t, buildTar(t, fixtureEntries()), gzip.BestSpeed)
	r := newRegistry(t, blob)
	_, err := Open(context.Background(), r.blobReader(), Options{Dir: t.TempDir(), TOCDigest: digest.FromString("another TOC")})
	if !errors.Is(err, ErrTOCDigest) {
		t.Fatalf("Open: %v, want ErrTOCDigest", err)
	}
}

// TestRangeRefused: a registry that answers ranges with the whole blob
// cannot serve a lazy layer (the pull falls back to a full one).
func TestRangeRefused(t *testing.T) {
	blob, toc := buildBlob(t, buildTar(t, fixtureEntries()), gzip.BestSpeed)
	r := newRegistry(t, blob)
	r.noRanges.Store(true)
	_, err := Open(context.Background(), r.blobReader(), Options{Dir: t.TempDir(), TOCDigest: toc, FetchTimeout: time.Second})
	if !errors.Is(err, ErrRangeRefused) {
		t.Fatalf("Open: %v, want ErrRangeRefused", err)
	}
}

// TestRegistryGoneAndBack: while the registry hangs, or drops every
// connection, a read of a chunk not fetched yet is EIO after the fetch
// timeout (not before, not much after), the tree's metadata still answers
// at once; when it is back, the same read returns the bytes.
func TestRegistryGoneAndBack(t *testing.T) {
	for name, gone := range map[string]func(*registry, bool){
		"hangs":  func(r *registry, v bool) { r.down.Store(v) },
		"resets": func(r *registry, v bool) { r.reset.Store(v) },
	} {
		t.Run(name, func(t *testing.T) { testGoneAndBack(t, gone) })
	}
}

func testGoneAndBack(t *testing.T, gone func(*registry, bool)) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	r := newRegistry(t, blob)
	const bound = 1500 * time.Millisecond
	m := mountFixture(t, r, toc, Options{FetchTimeout: bound})
	app := filepath.Join(m.Mountpoint, "bin/app")
	gone(r, true)
	start := time.Now()
	_, err := readAt(app, 4096, 10*testChunk)
	took := time.Since(start)
	if !errors.Is(err, syscall.EIO) || took < bound || took > bound+3*time.Second {
		t.Fatalf("read with the registry gone: %v after %v; want EIO after %v", err, took, bound)
	}
	start = time.Now()
	if _, err := os.ReadDir(filepath.Join(m.Mountpoint, "etc")); err != nil || time.Since(start) > 2*time.Second {
		t.Errorf("readdir with the registry gone: %v after %v", err, time.Since(start))
	}
	gone(r, false)
	time.Sleep(outageGrace) // reads fail at once for this long after a timeout
	b, err := readAt(app, 4096, 10*testChunk)
	if err != nil || !bytes.Equal(b, entryData(entries, "bin/app")[10*testChunk:10*testChunk+4096]) {
		t.Fatalf("read with the registry back: %v", err)
	}
	t.Logf("EIO after %v (bound %v)", took.Round(time.Millisecond), bound)
}

// TestPrefetchThenBackground: Prefetch caches the prioritized files with one
// range request; the background fetch completes the layer; then every file
// reads with the registry gone, and a layer reopened on the same cache
// directory, still without the registry, is complete (its TOC kept there);
// a kept TOC that is not the layer's is fetched again.
func TestPrefetchThenBackground(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	r := newRegistry(t, blob)
	cache := filepath.Join(t.TempDir(), "cache")
	m := mountFixture(t, r, toc, Options{Dir: cache, SpanBytes: 1 << 20})
	before := r.requests.Load()
	if err := m.Layer.Prefetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := r.requests.Load() - before; n != 1 {
		t.Errorf("prefetch took %d range requests, want 1", n)
	}
	for _, name := range prioritized {
		e, _ := m.Layer.r.Lookup(name)
		for _, i := range m.Layer.files[e] {
			if !m.Layer.have[m.Layer.chunks[i].stream] {
				t.Errorf("%s not prefetched", name)
			}
		}
	}
	m.Layer.Background()
	waitFor(t, 10*time.Second, m.Layer.Complete)
	// The background fetch saves the cache's state after its last stream
	// (Complete is true before): wait for it to end, so that the reopen
	// below reads the saved state (a reopen in between read an incomplete
	// one, and its Close then wrote that back: 1 CI run in a few).
	m.Layer.wg.Wait()
	t.Logf("blob %d bytes fetched with %d range requests", len(blob), r.requests.Load()-before)
	r.down.Store(true)
	compareTree(t, m.Mountpoint, expectedTree(entries))
	// Reopened on its cache with the registry still gone: the kept TOC
	// serves, and every chunk is there.
	l, err := Open(context.Background(), r.blobReader(), Options{Dir: cache, TOCDigest: toc, FetchTimeout: time.Second})
	if err != nil {
		t.Fatalf("reopen without the registry: %v", err)
	}
	if !l.Complete() {
		t.Error("layer reopened on a complete cache is not complete")
	}
	_ = l.Close()
	r.down.Store(false)
	// A kept TOC that is not the layer's is read again from the registry.
	if err := os.WriteFile(filepath.Join(cache, tocFile), []byte("not a TOC"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir      string
		complete bool
	}{{cache, true}, {t.TempDir(), false}} {
		l, err := Open(context.Background(), r.blobReader(), Options{Dir: c.dir, TOCDigest: toc})
		if err != nil {
			t.Fatal(err)
		}
		if l.Complete() != c.complete {
			t.Errorf("layer reopened on %s: complete %v, want %v", c.dir, l.Complete(), c.complete)
		}
		_ = l.Close()
	}
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not done after %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stargzFooter is an eStargz footer naming a TOC at off: an empty gzip
// member whose extra field says where, built by estargz itself (Go 1.27's
// compress/gzip writes an empty member 3 bytes shorter than the 51 the
// format fixes).
func stargzFooter(t *testing.T, off int64) []byte {
	t.Helper()
	extra := fmt.Sprintf("%016xSTARGZ", off)
	b := estargz.CreateGzipFooter(append([]byte{'S', 'G', byte(len(extra)), 0}, extra...))
	if len(b) != estargz.FooterSize {
		t.Fatalf("footer of %d bytes", len(b))
	}
	return b
}

// TestTOCBombRefused: a TOC that decompresses past the bound is refused
// before estargz would read it into memory whole.
func TestTOCBombRefused(t *testing.T) {
	var blob bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&blob, gzip.BestSpeed)
	zeros := make([]byte, 1<<20)
	for range maxTOCJSON>>20 + 1 {
		_, _ = zw.Write(zeros)
	}
	_ = zw.Close()
	blob.Write(stargzFooter(t, 0))
	r := newRegistry(t, blob.Bytes())
	_, err := Open(context.Background(), r.blobReader(), Options{Dir: t.TempDir(), TOCDigest: digest.FromString("x")})
	if err == nil || !strings.Contains(err.Error(), "decompressed") {
		t.Fatalf("Open of a %d-byte TOC bomb: %v", blob.Len(), err)
	}
}

// TestTruncatedBlobIsEIO: a registry whose blob ends before a chunk does
// (shorter than the manifest says) gives that chunk's reads EIO within the
// fetch timeout; the chunks it still holds read.
func TestTruncatedBlobIsEIO(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	r := newRegistry(t, blob)
	m := mountFixture(t, r, toc, Options{FetchTimeout: time.Second})
	start, end := chunkRegion(t, blob, "bin/app", 20*testChunk)
	short := blob[:start+(end-start)/2]
	r.blob.Store(&short)
	app := filepath.Join(m.Mountpoint, "bin/app")
	t0 := time.Now()
	if _, err := readAt(app, 100, 20*testChunk); !errors.Is(err, syscall.EIO) || time.Since(t0) > 4*time.Second {
		t.Fatalf("chunk past the blob's end: %v after %v, want EIO within the bound", err, time.Since(t0))
	}
	time.Sleep(outageGrace)
	big := entryData(entries, "bin/app")
	if b, err := readAt(app, 100, 2*testChunk); err != nil || !bytes.Equal(b, big[2*testChunk:2*testChunk+100]) {
		t.Errorf("chunk before the cut: %v", err)
	}
}

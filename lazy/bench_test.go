package lazy

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	digest "github.com/opencontainers/go-digest"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/stargz-snapshotter/estargz"
)

// benchLayer is an interpreter-like layer: 40 MiB of libraries it does not
// load at start, 2,000 modules of 8 KiB, of which its start reads 200 (the
// prioritized files, 1.6 MiB).
func benchLayer(b *testing.B) ([]byte, []string) {
	entries := []tarEntry{dirEntry("usr/", 0o755, 0), dirEntry("usr/lib/", 0o755, 0), dirEntry("usr/lib/python/", 0o755, 0)}
	var start []string
	for i := range 5 {
		entries = append(entries, fileEntry(fmt.Sprintf("usr/lib/libbig%d.so", i), 0o755, randomBytes(uint64(100+i), 8<<20)))
	}
	for i := range 2000 {
		name := fmt.Sprintf("usr/lib/python/mod%04d.py", i)
		entries = append(entries, fileEntry(name, 0o644, randomBytes(uint64(1000+i), 8<<10)))
		if i%10 == 0 {
			start = append(start, name)
		}
	}
	tarb := buildTar(b, entries)
	bl, err := estargz.Build(io.NewSectionReader(bytesReader(tarb), 0, int64(len(tarb))),
		estargz.WithCompressionLevel(gzip.BestSpeed), estargz.WithPrioritizedFiles(start))
	if err != nil {
		b.Fatal(err)
	}
	defer bl.Close()
	blob, err := io.ReadAll(bl)
	if err != nil {
		b.Fatal(err)
	}
	benchTOC = bl.TOCDigest().String()
	return blob, start
}

var benchTOC string

// BenchmarkFirstRead: from a registry at 100 MB/s and 20 ms a request, the
// time until a start that reads its 200 modules has read them, lazily
// (open the TOC, mount, prefetch, read), against downloading the blob whole
// (what a full pull costs before it even unpacks); then the background
// fetch's time to complete the layer.
func BenchmarkFirstRead(b *testing.B) {
	needFUSE(b)
	blob, start := benchLayer(b)
	r := newRegistry(b, blob)
	r.latency, r.rate = 20*time.Millisecond, 100_000_000
	var full, lazy, complete time.Duration
	for range b.N {
		t0 := time.Now()
		resp, err := http.Get(r.srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		full += time.Since(t0)
		l, c := benchLazy(b, r, start)
		lazy += l
		complete += c
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64(len(blob))/1e6, "blob-MB")
	b.ReportMetric((full/n).Seconds()*1000, "full-ms")
	b.ReportMetric((lazy/n).Seconds()*1000, "lazy-first-read-ms")
	b.ReportMetric((complete/n).Seconds()*1000, "lazy-complete-ms")
}

func benchLazy(b *testing.B, r *registry, start []string) (first, complete time.Duration) {
	dir := b.TempDir()
	mnt := filepath.Join(dir, "mnt")
	_ = os.Mkdir(mnt, 0o755)
	t0 := time.Now()
	l, err := Open(context.Background(), r.blobReader(), Options{Dir: filepath.Join(dir, "cache"), TOCDigest: digestOf(benchTOC)})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	m, err := Mount(mnt, l, false)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Unmount()
	if err := l.Prefetch(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, name := range start {
		if _, err := os.ReadFile(filepath.Join(mnt, name)); err != nil {
			b.Fatal(err)
		}
	}
	first = time.Since(t0)
	l.Background()
	for !l.Complete() {
		time.Sleep(5 * time.Millisecond)
	}
	return first, time.Since(t0)
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func digestOf(s string) digest.Digest { return digest.Digest(s) }

// BenchmarkCachedRead: what reading through the lazy layer costs once it is
// complete (a fresh mount, so the kernel's page cache of it is empty; its
// cache file is in the page cache, as the extracted files of a full pull
// would be), then again through the same mount (the kernel's page cache),
// against reading the same files extracted on local disk.
func BenchmarkCachedRead(b *testing.B) {
	needFUSE(b)
	blob, _ := benchLayer(b)
	r := newRegistry(b, blob)
	dir := b.TempDir()
	cache, plain := filepath.Join(dir, "cache"), filepath.Join(dir, "plain")
	names := extractBenchLayer(b, blob, plain)
	l, err := Open(context.Background(), r.blobReader(), Options{Dir: cache, TOCDigest: digestOf(benchTOC)})
	if err != nil {
		b.Fatal(err)
	}
	if err := l.FetchAll(context.Background()); err != nil {
		b.Fatal(err)
	}
	_ = l.Close()
	var lazyT, warmT, plainT time.Duration
	var total int64
	for i := range b.N {
		mnt := filepath.Join(dir, fmt.Sprint("mnt", i))
		_ = os.Mkdir(mnt, 0o755)
		l, err := Open(context.Background(), r.blobReader(), Options{Dir: cache, TOCDigest: digestOf(benchTOC)})
		if err != nil {
			b.Fatal(err)
		}
		m, err := Mount(mnt, l, false)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		total = readAll(b, mnt, names)
		lazyT += time.Since(t0)
		t0 = time.Now()
		readAll(b, mnt, names) // again: the kernel's page cache
		warmT += time.Since(t0)
		_ = m.Unmount()
		_ = l.Close()
		t0 = time.Now()
		readAll(b, plain, names)
		plainT += time.Since(t0)
	}
	mb := float64(total) * float64(b.N) / 1e6
	b.ReportMetric(mb/lazyT.Seconds(), "lazy-MB/s")
	b.ReportMetric(mb/warmT.Seconds(), "lazy-again-MB/s")
	b.ReportMetric(mb/plainT.Seconds(), "local-MB/s")
}

// extractBenchLayer writes the layer's regular files under dir and lists them.
func extractBenchLayer(b *testing.B, blob []byte, dir string) []string {
	r, err := estargz.Open(io.NewSectionReader(bytes.NewReader(blob), 0, int64(len(blob))))
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	var walk func(string, *estargz.TOCEntry)
	walk = func(p string, d *estargz.TOCEntry) {
		d.ForeachChild(func(base string, e *estargz.TOCEntry) bool {
			name := filepath.Join(p, base)
			switch {
			case e.Type == "dir":
				walk(name, e)
			case e.Type == "reg" && !strings.HasPrefix(base, ".prefetch"):
				sr, _ := r.OpenFile(e.Name)
				data, _ := io.ReadAll(sr)
				_ = os.MkdirAll(filepath.Join(dir, p), 0o755)
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					b.Fatal(err)
				}
				names = append(names, name)
			}
			return true
		})
	}
	root, _ := r.Lookup("")
	walk("", root)
	return names
}

func readAll(b *testing.B, dir string, names []string) int64 {
	var n int64
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		n += int64(len(data))
	}
	return n
}

// BenchmarkStore: decompressing, checking and caching a whole layer from
// its blob, fetched already (the background fetch's CPU, without the
// registry), in uncompressed MB/s.
func BenchmarkStore(b *testing.B) {
	blob, _ := benchLayer(b)
	r := newRegistry(b, blob)
	var total int64
	var took time.Duration
	for range b.N {
		l, err := Open(context.Background(), r.blobReader(), Options{Dir: b.TempDir(), TOCDigest: digestOf(benchTOC)})
		if err != nil {
			b.Fatal(err)
		}
		bufs := make([][]byte, len(l.streams))
		for i, s := range l.streams {
			bufs[i] = blob[s.off:s.end]
		}
		t0 := time.Now()
		for i := range l.streams {
			if err := l.store(i, bufs[i]); err != nil {
				b.Fatal(err)
			}
		}
		took += time.Since(t0)
		total = l.total
		_ = l.Close()
	}
	b.ReportMetric(float64(total)/1e6/(took.Seconds()/float64(b.N)), "MB/s")
}

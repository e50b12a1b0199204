package lazy

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/stargz-snapshotter/estargz"
	digest "github.com/opencontainers/go-digest"
)

// TOCDigestAnnotation is the layer annotation that names the digest of the
// layer's TOC JSON: the trust anchor of a lazily read layer.
const TOCDigestAnnotation = estargz.TOCJSONDigestAnnotation

// DefaultFetchTimeout bounds a read that waits for the registry.
const DefaultFetchTimeout = 30 * time.Second

// defaultSpan is how many compressed bytes one background range request asks for.
const defaultSpan = 8 << 20

// maxStream bounds one gzip member of the blob, fetched into memory whole: a
// default eStargz chunk is 4 MiB; a layer with bigger ones is pulled whole.
const maxStream = 64 << 20

var (
	// ErrTOCDigest is a TOC that is not the one the manifest names.
	ErrTOCDigest = errors.New("TOC digest mismatch")
	// ErrCorrupt is a chunk whose bytes are not those its TOC digest names.
	ErrCorrupt = errors.New("chunk digest mismatch")
	// ErrUnavailable is a chunk the registry did not deliver in time.
	ErrUnavailable = errors.New("layer blob unavailable")
	// ErrClosed is a layer read after Close.
	ErrClosed = errors.New("layer closed")
	// ErrBadName is a TOC entry whose name or hard link target a full pull
	// would refuse or place elsewhere: the layer is pulled whole.
	ErrBadName = errors.New("bad entry name")
)

// Options configure a layer.
type Options struct {
	// Dir is the layer's cache directory (created): its fetched bytes and
	// which of them are there.
	Dir string
	// TOCDigest is the digest the manifest names for the layer's TOC.
	TOCDigest digest.Digest
	// FetchTimeout bounds a read waiting for the registry (DefaultFetchTimeout when 0).
	FetchTimeout time.Duration
	// SpanBytes is the compressed bytes per background range request (8 MiB when 0).
	SpanBytes int64
	// Silence is how long the background fetch waits after the process's
	// last prioritized fetch (DefaultSilence when 0; see priorities).
	Silence time.Duration
	// Tail is the end of the blob as the caller already read it (its
	// footer, and its TOC when it fits): the TOC is then read from it, not
	// asked of the registry again. It is checked as a read from the
	// registry would be; a tail that is not the blob's end is read again.
	Tail []byte
	Log  *slog.Logger
}

// chunk is a run of a regular file's bytes with its own TOC digest.
type chunk struct {
	file    *estargz.TOCEntry // the regular file
	ent     *estargz.TOCEntry // the chunk's own entry: its stream's Offset
	fileOff int64             // where in the file
	size    int64
	inner   int64 // where in its stream's uncompressed bytes
	dig     digest.Digest
	pos     int64 // where in the cache's data file
	stream  int
}

// stream is one compressed member of the blob, [off, end): the unit fetched,
// holding one or more chunks (sorted by inner).
type stream struct {
	off, end int64
	first, n int // chunks[first:first+n]
}

// Layer is an opened eStargz layer: its TOC checked, its chunks indexed, its
// cache open.
type Layer struct {
	r       *estargz.Reader
	blob    BlobReader
	opts    Options
	log     *slog.Logger
	chunks  []chunk
	streams []stream
	files   map[*estargz.TOCEntry][]int // a regular file's chunks, by file offset
	total   int64                       // uncompressed bytes of all chunks
	data    *os.File

	mu       sync.Mutex
	have     []bool // by stream
	inflight map[int]chan struct{}
	fetched  atomic.Int64
	// background and isClosed: Background started, Close called (under mu)
	background, isClosed bool
	outage               atomic.Int64 // unix ns when a read last gave up on the registry, 0 since it answered

	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Open reads the layer's TOC through blob, checks it against opts.TOCDigest,
// indexes its chunks and opens the cache under opts.Dir. The reads of the
// TOC are bound by the fetch timeout.
func Open(ctx context.Context, blob BlobReader, opts Options) (*Layer, error) {
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = DefaultFetchTimeout
	}
	if opts.SpanBytes <= 0 {
		opts.SpanBytes = defaultSpan
	}
	if opts.Silence <= 0 {
		opts.Silence = DefaultSilence
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if err := opts.TOCDigest.Validate(); err != nil {
		return nil, fmt.Errorf("lazy layer: TOC digest %q: %w", opts.TOCDigest, err)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.FetchTimeout)
	defer cancel()
	r, ra, tocOff, err := readTOC(ctx, blob, opts, true)
	if err != nil && !errors.Is(err, ErrUnavailable) && ra.loaded {
		// The kept TOC is not this layer's (or not whole): from the registry then.
		_ = os.Remove(filepath.Join(opts.Dir, tocFile))
		r, ra, tocOff, err = readTOC(ctx, blob, opts, false)
	}
	if err != nil {
		return nil, err
	}
	l := &Layer{r: r, blob: blob, opts: opts, log: opts.Log.With("toc", opts.TOCDigest.String()),
		files: map[*estargz.TOCEntry][]int{}, inflight: map[int]chan struct{}{}, closed: make(chan struct{})}
	if err := l.index(tocOff); err != nil {
		return nil, fmt.Errorf("lazy layer %s: %w", opts.TOCDigest, err)
	}
	if err := l.openCache(); err != nil {
		return nil, fmt.Errorf("lazy layer %s: cache: %w", opts.TOCDigest, err)
	}
	if err := ra.saveTail(opts.Dir, tocOff); err != nil {
		l.log.Warn("lazy: TOC not kept: the layer reopens only with its registry", "error", err)
	}
	return l, nil
}

// readTOC reads and checks the TOC (from the end of the blob kept in the
// cache directory, if useKept and it is there) and finds where it starts.
// Its size is bounded before estargz reads it whole (checkTOCSize).
func readTOC(ctx context.Context, blob BlobReader, opts Options, useKept bool) (*estargz.Reader, *tailReaderAt, int64, error) {
	ra := &tailReaderAt{ctxReaderAt: ctxReaderAt{ctx: ctx, b: blob}, size: blob.Size()}
	if useKept {
		ra.loadTail(opts.Dir)
		ra.addTail(opts.Tail)
	}
	sr := io.NewSectionReader(ra, 0, blob.Size())
	tocOff, footer, err := estargz.OpenFooter(sr)
	if err != nil {
		return nil, ra, 0, tocError(opts, ra, "footer", err)
	}
	if err := checkTOCSize(ra, tocOff, footer); err != nil {
		return nil, ra, 0, tocError(opts, ra, "TOC", err)
	}
	r, err := estargz.Open(sr) // served from what checkTOCSize read
	if err != nil {
		return nil, ra, 0, tocError(opts, ra, "TOC", err)
	}
	if got := r.TOCDigest(); got != opts.TOCDigest {
		return nil, ra, 0, fmt.Errorf("lazy layer: %w: blob's is %s, manifest says %s", ErrTOCDigest, got, opts.TOCDigest)
	}
	return r, ra, tocOff, nil
}

// tocError names the registry's failure, if a read failed (estargz keeps
// only the text of errors), as ErrUnavailable.
func tocError(opts Options, ra *tailReaderAt, what string, err error) error {
	if last := ra.lastErr(); last != nil {
		return fmt.Errorf("lazy layer %s: read %s: %w: %w", opts.TOCDigest, what, ErrUnavailable, last)
	}
	return fmt.Errorf("lazy layer %s: read %s: %w", opts.TOCDigest, what, err)
}

// maxTOCJSON bounds a TOC's decompressed bytes (about a million entries).
const maxTOCJSON = 256 << 20

// checkTOCSize bounds the TOC before estargz reads it whole and into
// memory: its compressed bytes (maxTOCKeep) and, decompressing it once
// keeping only its names, its JSON (maxTOCJSON): a TOC is the image
// author's, and the manifest's digest does not bound its size. The names
// must pass checkNames.
func checkTOCSize(ra *tailReaderAt, tocOff, footer int64) error {
	n := ra.size - footer - tocOff
	if tocOff < 0 || n <= 0 || n > maxTOCKeep {
		return fmt.Errorf("a TOC of %d bytes at %d (at most %d)", n, tocOff, maxTOCKeep)
	}
	b := make([]byte, n)
	if _, err := ra.ReadAt(b, tocOff); err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("TOC: %w", err)
	}
	cr := &countReader{r: io.LimitReader(zr, maxTOCJSON+1)}
	entries, perr := readRawTOC(cr)
	_, err = io.Copy(io.Discard, cr) // the size first, whatever the parse said
	switch {
	case cr.n > maxTOCJSON:
		return fmt.Errorf("a TOC of more than %d bytes decompressed", maxTOCJSON)
	case err != nil:
		return fmt.Errorf("TOC: %w", err)
	case perr != nil:
		return fmt.Errorf("TOC: %w", perr)
	}
	return checkNames(entries)
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// index lists every chunk of every regular file, in blob order, and groups
// them into streams; tocOff (where the TOC starts) bounds the data.
func (l *Layer) index(tocOff int64) error {
	regs := map[*estargz.TOCEntry]bool{}
	root, ok := l.r.Lookup("")
	if !ok {
		return errors.New("TOC has no root")
	}
	walkRegs(root, regs)
	for _, lm := range []string{estargz.PrefetchLandmark, estargz.NoPrefetchLandmark} {
		if e, ok := root.LookupChild(lm); ok {
			delete(regs, e) // not in the tree: never read
		}
	}
	for e := range regs {
		if err := l.addChunks(e); err != nil {
			return err
		}
	}
	sort.Slice(l.chunks, func(i, j int) bool {
		a, b := l.chunks[i], l.chunks[j]
		return a.ent.Offset < b.ent.Offset || a.ent.Offset == b.ent.Offset && a.inner < b.inner
	})
	return l.group(tocOff)
}

// walkRegs collects the regular files under dir.
func walkRegs(dir *estargz.TOCEntry, regs map[*estargz.TOCEntry]bool) {
	dir.ForeachChild(func(_ string, e *estargz.TOCEntry) bool {
		switch e.Type {
		case "dir":
			walkRegs(e, regs)
		case "reg":
			if e.Size > 0 {
				regs[e] = true
			}
		}
		return true
	})
}

// addChunks appends the chunks of a regular file.
func (l *Layer) addChunks(e *estargz.TOCEntry) error {
	for off := int64(0); off < e.Size; {
		ce, ok := l.r.ChunkEntryForOffset(e.Name, off)
		if !ok || ce.ChunkOffset != off || ce.ChunkSize <= 0 || off+ce.ChunkSize > e.Size {
			return fmt.Errorf("%q: no chunk at offset %d", e.Name, off)
		}
		d := ce.ChunkDigest
		if d == "" && ce.ChunkSize == e.Size {
			d = e.Digest // a file of one chunk may name only its whole digest
		}
		dig, err := digest.Parse(d)
		if err != nil {
			return fmt.Errorf("%q at %d: chunk digest %q: %w", e.Name, off, d, err)
		}
		l.chunks = append(l.chunks, chunk{file: e, ent: ce, fileOff: off, size: ce.ChunkSize, inner: ce.InnerOffset, dig: dig})
		off += ce.ChunkSize
	}
	return nil
}

// group cuts the sorted chunks into streams, gives each chunk its place in
// the data file, and lists each file's chunks.
func (l *Layer) group(tocOff int64) error {
	for i := range l.chunks {
		c := &l.chunks[i]
		if i == 0 || c.ent.Offset != l.chunks[i-1].ent.Offset {
			s := stream{off: c.ent.Offset, end: min(c.ent.NextOffset(), tocOff), first: i}
			if s.off < 0 || s.off >= s.end {
				return fmt.Errorf("%q: data at [%d, %d) outside the blob's data (TOC at %d)", c.file.Name, s.off, s.end, tocOff)
			}
			if s.end-s.off > maxStream {
				return fmt.Errorf("%q: a compressed chunk of %d bytes (at most %d)", c.file.Name, s.end-s.off, maxStream)
			}
			// A stream's end is the next offset in the TOC's own order, not
			// the blob's: a TOC whose offsets go back makes streams overlap,
			// and a span of them would be cut out of its buffer past its end.
			if n := len(l.streams); n > 0 && s.off < l.streams[n-1].end {
				return fmt.Errorf("%q: data at %d inside the previous chunk's [%d, %d): the TOC's offsets are out of order", c.file.Name, s.off, l.streams[n-1].off, l.streams[n-1].end)
			}
			l.streams = append(l.streams, s)
		}
		c.stream = len(l.streams) - 1
		l.streams[c.stream].n++
		c.pos = l.total
		l.total += c.size
		l.files[c.file] = append(l.files[c.file], i)
	}
	for _, idx := range l.files {
		sort.Slice(idx, func(a, b int) bool { return l.chunks[idx[a]].fileOff < l.chunks[idx[b]].fileOff })
	}
	return nil
}

// Total is the uncompressed bytes of the layer's files; Fetched how many of
// them are in the cache.
func (l *Layer) Total() int64 { return l.total }

// Fetched is how many bytes of the layer's files are in the cache.
func (l *Layer) Fetched() int64 { return l.fetched.Load() }

// Complete says whether every chunk is in the cache.
func (l *Layer) Complete() bool { return l.fetched.Load() == l.total }

// Close stops the background fetch, saves which chunks are cached and
// closes the cache. The layer must not be mounted any more.
func (l *Layer) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.isClosed = true
		l.mu.Unlock()
		close(l.closed)
		l.wg.Wait()
		err = errors.Join(l.saveState(), l.data.Close())
		if c, ok := l.blob.(interface{ CloseIdle() }); ok {
			c.CloseIdle()
		}
	})
	return err
}
